#include "sim/flow_solver.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace tide::sim
