#include "sim/executor.h"

#include <gtest/gtest.h>

namespace tide::sim {
namespace {

// Makes `t` take `lock` when it starts and give it back when it ends.
TaskId underLock(WorkGraph& g, TaskId t, int32_t lock) {
  g.tasks()[t].acquire = lock;
  g.tasks()[t].release = lock;
  return t;
}

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
  for (int i = 0; i < 3; ++i) underLock(g, g.addDelay(1.0, i, st), lock);
  auto r = execute(g, s);
  ASSERT_TRUE(r.isOk());
  EXPECT_DOUBLE_EQ(r->makespan, 3.0);
  EXPECT_DOUBLE_EQ(r->stages[0].busy, 3.0);
}

TEST(Executor, CriticalPathFollowsTheLastDependencyAndTheLock) {
  // Two branches join: a 1 s delay "a" and a 3 s delay "b" feed "c" (2 s).
  // Then two 1 s tasks "l" share a lock after c; the second waits for the
  // first. The critical path is b, c, l, l: 3 + 2 + 2 = 7 s, and "a" is off it.
  FlowSolver s;
  WorkGraph g;
  auto sa = g.stageId("a"), sb = g.stageId("b"), sc = g.stageId("c"), sl = g.stageId("l");
  TaskId a = g.addDelay(1.0, 0, sa), b = g.addDelay(3.0, 1, sb), c = g.addDelay(2.0, 0, sc);
  g.dep(a, c);
  g.dep(b, c);
  int32_t lock = g.addLock();
  for (int i = 0; i < 2; ++i) g.dep(c, underLock(g, g.addDelay(1.0, i, sl), lock));
  auto r = execute(g, s);
  ASSERT_TRUE(r.isOk());
  EXPECT_DOUBLE_EQ(r->makespan, 7.0);
  EXPECT_DOUBLE_EQ(r->stages[sa].critical, 0.0);
  EXPECT_DOUBLE_EQ(r->stages[sb].critical, 3.0);
  EXPECT_DOUBLE_EQ(r->stages[sc].critical, 2.0);
  EXPECT_DOUBLE_EQ(r->stages[sl].critical, 2.0);
  EXPECT_DOUBLE_EQ(r->stages[sa].busy, 1.0);
}

TEST(Executor, CriticalPathThroughALockWaiterAndAFlowLatency) {
  // Two tasks ready at t=0 want one lock: the second (1 s) waits for the
  // first (2 s), then a flow (0.5 s latency, 100 B at 100 B/s) follows it.
  // The path is: first holder 2 s, waiter 1 s, flow 1.5 s = 4.5 s.
  FlowSolver s;
  WorkGraph g;
  LinkId l = s.addLink(100.0);
  uint32_t p = g.addPath({l});
  auto sh = g.stageId("holder"), sw = g.stageId("waiter"), sf = g.stageId("flow");
  int32_t lock = g.addLock();
  underLock(g, g.addDelay(2.0, 0, sh), lock);
  TaskId w = underLock(g, g.addDelay(1.0, 1, sw), lock);
  TaskId f = g.addFlow(p, 100.0, 0.5, 1, 2, sf, TaskPath::kRdma);
  g.dep(w, f);
  auto r = execute(g, s);
  ASSERT_TRUE(r.isOk());
  EXPECT_DOUBLE_EQ(r->makespan, 4.5);
  EXPECT_DOUBLE_EQ(r->stages[sh].critical, 2.0);
  EXPECT_DOUBLE_EQ(r->stages[sw].critical, 1.0);
  EXPECT_DOUBLE_EQ(r->stages[sf].critical, 1.5);
}

TEST(Executor, PolledLockSitsFreeUntilTheNextPollAndTheHolderCanRetakeIt) {
  // Chain A: a1 (2 s, under the lock), then 0.5 s of work, then a2 (1 s,
  // under the lock). B (1 s) wants the lock at t=0.1 and polls every 1 s:
  // it tries at 0.1 (held), 1.1 (held), 2.1 (free since 2.0, but A's a2 is
  // only ready at 2.5) and takes it: 2.1-3.1. a2 then polls at 2.5 (held)
  // and 3.5: 3.5-4.5. First-come, B would take the lock at 2.0 and a2 at
  // 3.0, ending at 4.0.
  for (double poll : {0.0, 1.0}) {
    FlowSolver s;
    WorkGraph g;
    auto sa = g.stageId("a"), sw = g.stageId("work"), sb = g.stageId("b");
    auto sp = g.stageId("poll");
    int32_t lock = g.addLock(poll, sp);
    TaskId a1 = underLock(g, g.addDelay(2.0, 0, sa), lock);
    TaskId work = g.addDelay(0.5, 0, sw);
    TaskId a2 = underLock(g, g.addDelay(1.0, 0, sa), lock);
    g.dep(a1, work);
    g.dep(work, a2);
    TaskId wake = g.addDelay(0.1, 1, sw);
    g.dep(wake, underLock(g, g.addDelay(1.0, 1, sb), lock));
    auto r = execute(g, s);
    ASSERT_TRUE(r.isOk());
    if (poll == 0) {
      EXPECT_DOUBLE_EQ(r->makespan, 4.0);
      EXPECT_DOUBLE_EQ(r->stages[sp].critical, 0.0);
      continue;
    }
    EXPECT_DOUBLE_EQ(r->makespan, 4.5);
    // The path: a1 2 s, free 0.1 s, b 1 s, free 0.4 s, a2 1 s.
    EXPECT_DOUBLE_EQ(r->stages[sa].critical, 3.0);
    EXPECT_DOUBLE_EQ(r->stages[sb].critical, 1.0);
    EXPECT_NEAR(r->stages[sp].critical, 0.5, 1e-12);
    EXPECT_DOUBLE_EQ(r->stages[sw].critical, 0.0);
  }
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
