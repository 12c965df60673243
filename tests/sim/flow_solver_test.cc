#include "sim/flow_solver.h"

#include <gtest/gtest.h>

#include <vector>

namespace tide::sim {
namespace {

TEST(FlowSolver, SingleFlowRunsAtLinkCapacity) {
  FlowSolver s;
  LinkId l = s.addLink(10.0);
  FlowId f = s.start({l}, 100.0, 0.0);
  s.resolve(0.0);
  EXPECT_DOUBLE_EQ(s.rate(f), 10.0);
  EXPECT_DOUBLE_EQ(s.nextCompletion(), 10.0);
}

TEST(FlowSolver, MaxMinFairClassicExample) {
  // Flow A crosses links 1 and 2, B only 1, C only 2. Link 1 = 10, link 2 = 4:
  // link 2 saturates first (A = C = 2), then B gets 10 - 2 = 8.
  FlowSolver s;
  LinkId l1 = s.addLink(10.0), l2 = s.addLink(4.0);
  FlowId a = s.start({l1, l2}, 1e9, 0), b = s.start({l1}, 1e9, 0), c = s.start({l2}, 1e9, 0);
  s.resolve(0);
  EXPECT_DOUBLE_EQ(s.rate(a), 2.0);
  EXPECT_DOUBLE_EQ(s.rate(c), 2.0);
  EXPECT_DOUBLE_EQ(s.rate(b), 8.0);
}

TEST(FlowSolver, FinishedFlowReleasesBandwidth) {
  FlowSolver s;
  LinkId l = s.addLink(10.0);
  FlowId a = s.start({l}, 10.0, 0);
  FlowId b = s.start({l}, 30.0, 0);
  s.resolve(0);
  EXPECT_DOUBLE_EQ(s.nextCompletion(), 2.0);  // both at 5 B/s
  auto done = s.popCompleted(2.0);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0], a);
  s.resolve(2.0);
  EXPECT_DOUBLE_EQ(s.rate(b), 10.0);
  EXPECT_DOUBLE_EQ(s.nextCompletion(), 4.0);  // 20 left at 10 B/s
}

TEST(FlowSolver, UntouchedComponentKeepsItsRateAndIsNotResolved) {
  FlowSolver s;
  LinkId l1 = s.addLink(10.0), l2 = s.addLink(10.0);
  FlowId a = s.start({l1}, 100, 0);
  s.start({l2}, 100, 0);
  s.resolve(0);
  uint64_t before = s.solvedFlows();
  s.start({l2}, 100, 1.0);
  s.resolve(1.0);
  EXPECT_EQ(s.solvedFlows() - before, 2u);  // only l2's two flows
  EXPECT_DOUBLE_EQ(s.rate(a), 10.0);
}

TEST(FlowSolver, IdenticalFlowsFinishInOneBatch) {
  FlowSolver s;
  LinkId l = s.addLink(3.0);
  for (int i = 0; i < 3; ++i) s.start({l}, 1.0, 0);
  s.resolve(0);
  double t = s.nextCompletion();
  EXPECT_NEAR(t, 1.0, 1e-12);
  EXPECT_EQ(s.popCompleted(t).size(), 3u);
  EXPECT_EQ(s.activeFlows(), 0u);
}

TEST(FlowSolver, ZeroCapacityNeverFinishes) {
  FlowSolver s;
  LinkId l = s.addLink(0.0);
  s.start({l}, 1.0, 0);
  s.resolve(0);
  EXPECT_EQ(s.nextCompletion(), std::numeric_limits<double>::infinity());
}

TEST(FinishHeap, KeepsOneEntryPerFlowAndReKeysInPlace) {
  FinishHeap h;
  h.set(3, 5.0);
  h.set(1, 2.0);
  h.set(2, 2.0);  // ties come out by flow id
  h.set(0, 9.0);
  EXPECT_EQ(h.top(), 1u);
  h.set(1, 7.0);  // later: sinks
  EXPECT_EQ(h.top(), 2u);
  h.set(0, 1.0);  // earlier: rises
  EXPECT_EQ(h.top(), 0u);
  h.erase(0);
  h.erase(0);  // absent: no-op
  std::vector<uint32_t> order;
  while (!h.empty()) {
    order.push_back(h.top());
    h.erase(h.top());
  }
  EXPECT_EQ(order, (std::vector<uint32_t>{2, 3, 1}));
}

// A large component where most completions change most rates: the solver's
// rates must stay max-min fair at every step (checked against the links'
// capacities: no link over, every flow bottlenecked somewhere).
TEST(FlowSolver, ManyCompletionsKeepRatesFeasible) {
  FlowSolver s;
  std::vector<LinkId> tx, rx;
  for (int i = 0; i < 8; ++i) tx.push_back(s.addLink(10.0 + i));
  for (int i = 0; i < 8; ++i) rx.push_back(s.addLink(12.0));
  std::vector<std::vector<LinkId>> paths;
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b) {
      paths.push_back({tx[a], rx[b]});
      s.start(paths.back(), 1.0 + (a * 8 + b) % 7, 0.0);
    }
  s.resolve(0.0);
  std::vector<bool> done(paths.size());
  size_t finished = 0;
  double now = 0;
  while (finished < paths.size()) {
    now = s.nextCompletion();
    ASSERT_LT(now, 1e9);
    for (FlowId f : s.popCompleted(now)) {
      done[f] = true;
      ++finished;
    }
    s.resolve(now);
    std::vector<double> load(s.linkCount(), 0.0);
    for (size_t f = 0; f < paths.size(); ++f)
      if (!done[f])
        for (LinkId l : paths[f]) load[l] += s.rate(static_cast<FlowId>(f));
    for (LinkId l = 0; l < s.linkCount(); ++l) EXPECT_LE(load[l], s.capacity(l) * (1 + 1e-9));
    for (size_t f = 0; f < paths.size(); ++f) {
      if (done[f]) continue;
      bool bottlenecked = false;
      for (LinkId l : paths[f]) bottlenecked |= load[l] >= s.capacity(l) * (1 - 1e-9);
      EXPECT_TRUE(bottlenecked) << "flow " << f << " could go faster";
    }
  }
}

}  // namespace
}  // namespace tide::sim
