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

TEST(Executor, ALongRunReportsItsProgress) {
  // 20,000 delays in a chain: 20,000 events. With no wall-time gap between
  // reports, one every 4,096 events, each further along in tasks and time.
  auto chain = [] {
    WorkGraph g;
    auto st = g.stageId("x");
    TaskId prev = g.addDelay(1.0, 0, st);
    for (int i = 1; i < 20000; ++i) {
      TaskId d = g.addDelay(1.0, 0, st);
      g.dep(prev, d);
      prev = d;
    }
    return g;
  };
  std::vector<std::pair<uint64_t, double>> seen;
  WorkGraph g = chain();
  FlowSolver s;
  auto r = execute(
      g, s, {},
      [&](uint64_t done, uint64_t total, double t) {
        EXPECT_EQ(total, 20000u);
        seen.push_back({done, t});
      },
      0.0);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  ASSERT_EQ(seen.size(), 4u);
  for (size_t i = 1; i < seen.size(); ++i) {
    EXPECT_GT(seen[i].first, seen[i - 1].first);
    EXPECT_GT(seen[i].second, seen[i - 1].second);
  }
  EXPECT_DOUBLE_EQ(r->makespan, 20000.0);
  // The default gap (10 s) is not reached by a run this short.
  int calls = 0;
  WorkGraph again = chain();
  FlowSolver s2;
  ASSERT_TRUE(execute(again, s2, {}, [&](uint64_t, uint64_t, double) { ++calls; }).isOk());
  EXPECT_EQ(calls, 0);
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

// Chain A: a1 (2 s, under the lock), then `work` on the same rank, then a2
// (1 s, under the lock). B (1 s under the lock) first tries at t=0.1.
struct PollRun {
  ExecResult r;
  uint16_t a, work, b, poll;
};
// A polled lock's sleepers wake 0.1 of the period after its release.
PollRun runPollScenario(double poll, double work) {
  FlowSolver s;
  WorkGraph g;
  PollRun out{};
  out.a = g.stageId("a");
  out.work = g.stageId("work");
  out.b = g.stageId("b");
  out.poll = g.stageId("poll");
  int32_t lock = poll > 0 ? g.addPolledLock(poll, out.poll) : g.addLock();
  TaskId a1 = underLock(g, g.addDelay(2.0, 0, out.a), lock);
  TaskId w = g.addDelay(work, 0, out.work);
  TaskId a2 = underLock(g, g.addDelay(1.0, 0, out.a), lock);
  g.dep(a1, w);
  g.dep(w, a2);
  TaskId wake = g.addDelay(0.1, 1, out.work);
  g.dep(wake, underLock(g, g.addDelay(1.0, 1, out.b), lock));
  auto r = execute(g, s, [] { return 0.1; });
  EXPECT_TRUE(r.isOk()) << r.status().toString();
  if (r.isOk()) out.r = std::move(r).value();
  return out;
}

TEST(Executor, PolledLockSitsFreeUntilTheNextPoll) {
  // work 0.5 s. First-come: B takes the lock at 2.0, a2 at 3.0, end 4.0.
  PollRun fifo = runPollScenario(0, 0.5);
  EXPECT_DOUBLE_EQ(fifo.r.makespan, 4.0);
  EXPECT_DOUBLE_EQ(fifo.r.stages[fifo.poll].critical, 0.0);
  // Polled (1 s period): B finds it held at 0.1 and sleeps; released at 2.0,
  // B tries at 2.1 and holds it 2.1-3.1; a2 (ready 2.5) finds it held,
  // tries again at 3.2: 3.2-4.2.
  PollRun p = runPollScenario(1.0, 0.5);
  EXPECT_NEAR(p.r.makespan, 4.2, 1e-12);
  // The path: a1 2 s, free 0.1 s, b 1 s, free 0.1 s, a2 1 s.
  EXPECT_NEAR(p.r.stages[p.a].critical, 3.0, 1e-12);
  EXPECT_NEAR(p.r.stages[p.b].critical, 1.0, 1e-12);
  EXPECT_NEAR(p.r.stages[p.poll].critical, 0.2, 1e-12);
  EXPECT_DOUBLE_EQ(p.r.stages[p.work].critical, 0.0);
}

TEST(Executor, TheReleasingChainRetakesAPolledLockBeforeTheNextPoll) {
  // work 0.05 s: a2 is ready at 2.05, before B's next try (2.1), and takes
  // the lock on its first try (its own dependency made it ready): 2.05-3.05.
  // B tries at 2.1 (held) and 3.15: 3.15-4.15.
  PollRun p = runPollScenario(1.0, 0.05);
  EXPECT_NEAR(p.r.makespan, 4.15, 1e-12);
  // The path: a1 2 s, work 0.05 s, a2 1 s, free 0.1 s, b 1 s.
  EXPECT_NEAR(p.r.stages[p.a].critical, 3.0, 1e-12);
  EXPECT_NEAR(p.r.stages[p.work].critical, 0.05, 1e-12);
  EXPECT_NEAR(p.r.stages[p.b].critical, 1.0, 1e-12);
  EXPECT_NEAR(p.r.stages[p.poll].critical, 0.1, 1e-12);
}

TEST(Executor, APolledLockNeverReleasedIsReportedNotHung) {
  FlowSolver s;
  WorkGraph g;
  auto st = g.stageId("x");
  int32_t lock = g.addPolledLock(0.1, st);
  TaskId holder = g.addDelay(1.0, 0, st);
  g.tasks()[holder].acquire = lock;  // never released
  underLock(g, g.addDelay(1.0, 1, st), lock);
  auto r = execute(g, s);
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("lock held"), std::string::npos) << r.status().toString();
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
