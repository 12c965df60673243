#include "sim/executor.h"

#include <gtest/gtest.h>

namespace tide::sim {
namespace {

TEST(Executor, ChainOfDelayAndFlow) {
  FlowSolver s;
  WorkGraph g;
  LinkId l = s.addLink(100.0);
  uint32_t p = g.addPath({l});
  auto st = g.stageId("x");
  TaskId d = g.addDelay(1.0, 0, st);
  TaskId f = g.addFlow(p, 200.0, 0.5, 0, 1, st, TaskPath::kRdma);
  g.dep(d, f);
  auto r = execute(g, s);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_DOUBLE_EQ(r->makespan, 1.0 + 0.5 + 2.0);
  ASSERT_EQ(r->events.size(), 2u);
  EXPECT_DOUBLE_EQ(r->events[1].tStart, 1.0);
}

TEST(Executor, LockSerializesTasks) {
  FlowSolver s;
  WorkGraph g;
  auto st = g.stageId("x");
  int32_t lock = g.addLock();
  for (int i = 0; i < 3; ++i) {
    TaskId t = g.addDelay(1.0, i, st);
    g.tasks()[t].acquire = lock;
    g.tasks()[t].release = lock;
  }
  auto r = execute(g, s);
  ASSERT_TRUE(r.isOk());
  EXPECT_DOUBLE_EQ(r->makespan, 3.0);
  EXPECT_DOUBLE_EQ(r->stages[0].busy, 3.0);
}

TEST(Executor, ParallelFlowsShareALink) {
  FlowSolver s;
  WorkGraph g;
  LinkId l = s.addLink(10.0);
  uint32_t p = g.addPath({l});
  auto st = g.stageId("x");
  g.addFlow(p, 10.0, 0, 0, 1, st, TaskPath::kRdma);
  g.addFlow(p, 10.0, 0, 0, 2, st, TaskPath::kRdma);
  auto r = execute(g, s);
  ASSERT_TRUE(r.isOk());
  EXPECT_NEAR(r->makespan, 2.0, 1e-12);
}

TEST(Executor, CycleIsReportedNotHung) {
  FlowSolver s;
  WorkGraph g;
  auto st = g.stageId("x");
  TaskId a = g.addDelay(1, 0, st), b = g.addDelay(1, 0, st);
  g.dep(a, b);
  g.dep(b, a);
  auto r = execute(g, s);
  EXPECT_FALSE(r.isOk());
}

TEST(Executor, ZeroCapacityLinkIsAnError) {
  FlowSolver s;
  WorkGraph g;
  LinkId l = s.addLink(0.0);
  g.addFlow(g.addPath({l}), 1.0, 0, 0, 1, g.stageId("x"), TaskPath::kRdma);
  auto r = execute(g, s);
  EXPECT_FALSE(r.isOk());
}

}  // namespace
}  // namespace tide::sim
