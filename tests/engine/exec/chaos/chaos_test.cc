// The soak's parts (engine/exec/chaos_*.h and what they rest on): the fault
// schedule is a function of the seed alone; the driver protocol's records
// round-trip; an abortable store ends a wait on the supervisor's word; the
// store server drops finished keys and reaps connections; /proc sampling and
// rank processes; the growth check; and the executor's resume (a later
// start version, a carried shard) and commit gate, ranks as threads over tcp.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <functional>
#include <thread>

#include "engine/core/clock.h"
#include "engine/exec/chaos/chaos_protocol.h"
#include "engine/exec/chaos/chaos_report.h"
#include "engine/exec/chaos/fault_schedule.h"
#include "engine/exec/chaos/process_sample.h"
#include "engine/exec/executor/fp8_blocks.h"
#include "engine/exec/executor/shard_digest.h"
#include "engine/exec/launch/rank_process.h"
#include "engine/exec/rank/rank_executor.h"
#include "engine/exec/rendezvous/abortable_store.h"
#include "engine/exec/rendezvous/store_server.h"
#include "engine/exec/rendezvous/tcp_store.h"
#include "engine/transport/registry.h"
#include "tests/engine/exec/plan_fixture.h"
#include "tests/fakes/faulty_transport.h"
#include "tests/sanitizers.h"

namespace tide::exec {
namespace {

using tide::testing::kTimeScale;

ChaosSpace space(int updates) {
  ChaosSpace s;
  s.updates = updates;
  s.ranks = {0, 1, 2, 3, 4, 5, 6, 7};
  s.nodes = 4;
  s.storeNodes = 8;
  s.kinds = {std::begin(kAllFaultKinds), std::end(kAllFaultKinds)};
  return s;
}

std::vector<std::string> lines(const FaultSchedule& s) {
  std::vector<std::string> out;
  for (const auto& f : s.faults()) out.push_back(f.toString());
  return out;
}

TEST(FaultSchedule, TheSeedAloneDecides) {
  const auto a = orThrow(FaultSchedule::generate(42, space(200)));
  const auto b = orThrow(FaultSchedule::generate(42, space(200)));
  const auto c = orThrow(FaultSchedule::generate(43, space(200)));
  EXPECT_EQ(lines(a), lines(b));
  EXPECT_NE(lines(a), lines(c));
  // A longer run keeps the shorter one's faults: each update draws alike.
  const auto longer = orThrow(FaultSchedule::generate(42, space(400)));
  std::vector<std::string> prefix;
  for (const auto& f : longer.faults()) {
    if (f.update <= 200) prefix.push_back(f.toString());
  }
  EXPECT_EQ(prefix, lines(a));
  // Pinned: the same numbers on any host and compiler (no <random> distributions).
  ASSERT_FALSE(a.faults().empty());
  EXPECT_EQ(a.faults().front().toString(), a.forUpdate(a.faults().front().update)->toString());
}

TEST(FaultSchedule, RateKindsAndBounds) {
  ChaosSpace s = space(500);
  s.rate = 0;
  EXPECT_TRUE(orThrow(FaultSchedule::generate(1, s)).faults().empty());
  s.rate = 1;
  s.kinds = {FaultKind::kSlowRank};
  s.maxBurstSeconds = 0.7;
  const auto every = orThrow(FaultSchedule::generate(1, s));
  ASSERT_EQ(every.faults().size(), 500u);
  for (const auto& f : every.faults()) {
    EXPECT_EQ(f.kind, FaultKind::kSlowRank);
    EXPECT_GE(f.seconds, 0.2);
    EXPECT_LE(f.seconds, 0.7 + 1e-9);
    EXPECT_GE(f.at, 0.05 - 1e-9);
    EXPECT_LT(f.at, 0.9 + 1e-9);
    EXPECT_GE(f.target, 0);
    EXPECT_LT(f.target, 8);
  }
  s = space(1000);
  const auto mixed = orThrow(FaultSchedule::generate(7, s));
  const auto counts = mixed.counts();
  EXPECT_EQ(counts.size(), 4u) << "every kind drawn in 1000 updates";
  const double n = static_cast<double>(mixed.faults().size());
  EXPECT_GT(n, 0.2 * 1000);
  EXPECT_LT(n, 0.4 * 1000);
  for (const auto& f : mixed.faults()) {
    if (f.kind == FaultKind::kLinkBurst) {
      EXPECT_LT(f.target, 4);
      EXPECT_GE(f.lossPercent, 1);
      EXPECT_LE(f.lossPercent, 20);
      EXPECT_GE(f.ratePercent, 10);
      EXPECT_LE(f.ratePercent, 100);
    }
  }
  // Kills hit only the ranks they may (the others live through the run).
  s = space(300);
  s.rate = 1;
  s.kinds = {FaultKind::kKillRank};
  s.killable = {2, 5};
  const auto kills = orThrow(FaultSchedule::generate(3, s));
  for (const auto& f : kills.faults()) {
    EXPECT_TRUE(f.target == 2 || f.target == 5) << f.toString();
  }
  s.killable = {9};
  EXPECT_FALSE(FaultSchedule::generate(3, s).isOk());
  const Fault* next = mixed.nextStoreLoss(1);
  ASSERT_NE(next, nullptr);
  EXPECT_EQ(next->kind, FaultKind::kStoreNodeLoss);
}

TEST(FaultSchedule, BadInputIsRefused) {
  ChaosSpace s = space(10);
  s.storeNodes = 0;
  auto r = FaultSchedule::generate(1, s);
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("--strategy store"), std::string::npos);
  s = space(0);
  EXPECT_FALSE(FaultSchedule::generate(1, s).isOk());
  s = space(10);
  s.rate = 1.5;
  EXPECT_FALSE(FaultSchedule::generate(1, s).isOk());
  EXPECT_FALSE(parseFaultKinds("kill,typo").isOk());
  EXPECT_FALSE(parseFaultKinds("").isOk());
  EXPECT_EQ(orThrow(parseFaultKinds("slow,kill,slow")).size(), 2u);
  EXPECT_EQ(orThrow(parseFaultKinds("all")).size(), 4u);
}

TEST(ChaosProtocol, RecordsRoundTrip) {
  chaos::Command c;
  c.kind = chaos::CommandKind::kEpoch;
  c.epoch = 7;
  c.version = 12;
  c.loseNode = 3;
  c.loseStep = 14;
  c.loseDuringImport = true;
  const auto d = orThrow(chaos::Command::decode(c.encode()));
  EXPECT_EQ(d.encode(), c.encode());
  EXPECT_EQ(d.loseStep, 14);
  chaos::Reply r;
  r.ok = false;
  r.served = 11;
  r.digest = 0xfedcba9876543210ull;
  r.generationReads = 99;
  r.tornReads = 1;
  r.reloaded = true;
  r.message = "cancelled: aborted by the supervisor: rank 3 died";
  const auto e = orThrow(chaos::Reply::decode(r.encode()));
  EXPECT_EQ(e.encode(), r.encode());
  EXPECT_EQ(e.message, r.message);
  EXPECT_FALSE(chaos::Command::decode("update x").isOk());
  EXPECT_FALSE(chaos::Reply::decode("maybe 1 2 3 4 5").isOk());
  // Prefixes of different commands do not nest ("1/" is not a prefix of "10/").
  EXPECT_NE(chaos::replyKey(10, 0).rfind(chaos::commandPrefix(1), 0), 0u);
}

TEST(AbortableStore, AnAbortEndsAWaitEarly) {
  MemoryStore inner, control;
  AbortableStore s(inner, control, "abort", 0.05);
  ASSERT_TRUE(inner.set("here", "1").isOk());
  EXPECT_EQ(orThrow(s.get("here", 10)), "1");
  Stopwatch w;
  auto missing = s.get("never", 0.3);
  EXPECT_EQ(missing.status().code(), Code::kTimeout);
  EXPECT_GE(w.seconds(), 0.3);
  EXPECT_FALSE(s.aborted());
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    (void)control.set("abort", "rank 5 died");
  });
  w.reset();
  auto r = s.get("never", 60 * kTimeScale);
  t.join();
  ASSERT_EQ(r.status().code(), Code::kCancelled);
  EXPECT_NE(r.status().message().find("rank 5 died"), std::string::npos);
  EXPECT_LT(w.seconds(), 10 * kTimeScale) << "not the whole timeout";
  EXPECT_TRUE(s.aborted());
}

TEST(StoreServer, ErasesPrefixesAndReapsClosedConnections) {
  auto host = orThrow(TcpStore::host("127.0.0.1", 0, "tok"));
  StoreServer* server = host->hostedServer();
  ASSERT_NE(server, nullptr);
  for (const char* k : {"chaos/cmd/1/a", "chaos/cmd/1/b", "chaos/cmd/10/a", "chaos/cmd/2"}) {
    ASSERT_TRUE(host->set(k, "v").isOk());
  }
  EXPECT_EQ(server->erasePrefix("chaos/cmd/1/"), 2u);
  EXPECT_FALSE(host->get("chaos/cmd/1/a", 0).isOk());
  EXPECT_TRUE(host->get("chaos/cmd/10/a", 0).isOk());
  EXPECT_TRUE(host->get("chaos/cmd/2", 0).isOk());
  // Clients that come and go (restarted ranks) leave nothing behind.
  for (int i = 0; i < 20; ++i) {
    auto c = orThrow(TcpStore::connect("127.0.0.1", host->port(), "tok", 10));
    ASSERT_TRUE(c->set("k" + std::to_string(i), "v").isOk());
  }
  auto last = orThrow(TcpStore::connect("127.0.0.1", host->port(), "tok", 10));
  ASSERT_TRUE(last->set("last", "v").isOk());
  EXPECT_LE(server->connections(), 3u);
}

TEST(ProcessSample, CountsDescriptorsAndMemory) {
  const ProcessSample a = orThrow(sampleProcess(::getpid()));
  EXPECT_GT(a.fds, 2);
  EXPECT_GT(a.rssBytes, 1u << 20);
  EXPECT_GE(a.threads, 1);
  const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(orThrow(sampleProcess(::getpid())).fds, a.fds + 1);
  ::close(fd);
  EXPECT_EQ(sampleProcess(999999999).status().code(), Code::kNotFound);
}

TEST(RankProcess, StopsResumesAndIsKilled) {
  auto p = orThrow(RankProcess::spawn({"sleep", "60"}, {"PATH=/usr/bin:/bin"}));
  EXPECT_TRUE(p->running());
  EXPECT_TRUE(p->signal(SIGSTOP).isOk());
  EXPECT_TRUE(p->signal(SIGCONT).isOk());
  EXPECT_TRUE(p->running());
  p->kill();
  EXPECT_FALSE(p->running());
  EXPECT_EQ(p->exitCode(), 128 + SIGKILL);
  EXPECT_TRUE(p->signal(SIGCONT).isOk()) << "a process already gone is no error";
  auto q = orThrow(RankProcess::spawn({"true"}, {"PATH=/usr/bin:/bin"}));
  const Deadline d = Deadline::after(10 * kTimeScale);
  while (q->running() && !d.expired()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_FALSE(q->running());
  EXPECT_EQ(q->exitCode(), 0);
  EXPECT_EQ(RankProcess::spawn({"no-such-tide-binary"}, {}).status().code(), Code::kNotFound);
}

TEST(ChaosReport, GrowthOfLongLivedProcessesIsAViolation) {
  ChaosResult r;
  ChaosWindow first, last;
  first.lastUpdate = 100;
  last.lastUpdate = 1000;
  first.processes = {{-1, 10, true, 16, 20u << 20, 3},
                     {0, 11, true, 20, 30u << 20, 5},
                     {1, 12, true, 20, 30u << 20, 5}};
  last.processes = {{-1, 10, true, 16, 21u << 20, 3},
                    {0, 11, true, 20, 31u << 20, 5},
                    {1, 13, false, 40, 90u << 20, 5}};  // restarted: not compared
  r.windows = {first, last};
  checkGrowth(r);
  EXPECT_TRUE(r.ok()) << (r.violations.empty() ? "" : r.violations[0]);
  EXPECT_EQ(r.fdGrowth, 0);
  EXPECT_EQ(r.rssGrowthBytes, 1 << 20);
  r.windows.back().processes[1].fds = 21;
  r.windows.back().processes[0].rssBytes = 40u << 20;
  checkGrowth(r);
  EXPECT_EQ(r.violationCount, 2);
  EXPECT_EQ(r.fdGrowth, 1);
}

// Ranks as threads over tcp running `steps` with each rank's options; with
// `control`, the ranks' store is abortable through its "abort" key, as in
// a soak. Returns each rank's last step and what it serves after.
struct ThreadRun {
  std::vector<Status> last;
  std::vector<ServedVersion> served;
  std::vector<uint64_t> digests;
  double seconds = 0;
};

using OptionsFor = std::function<ExecOptions(int rank)>;
using Wrap = std::function<std::unique_ptr<transport::Transport>(
    std::unique_ptr<transport::Transport>, int rank)>;

ThreadRun runSteps(const PlanFixture& s, const workloads::SyntheticWeights& w,
                   const OptionsFor& optionsFor, const std::vector<int>& steps,
                   const Wrap& wrap = {}, Store* control = nullptr) {
  auto layouts = orThrow(RankLayout::buildAll(s.plan));
  const int world = static_cast<int>(s.plan.ranks.size());
  MemoryStore store;
  ThreadRun out;
  out.last.assign(world, Status::ok());
  out.served.resize(world);
  out.digests.assign(world, 0);
  const Stopwatch clock;
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      transport::TransportConfig c;
      c.backend = "tcp";
      c.streams = 1;
      c.rank = r;
      c.worldSize = world;
      PrefixStore ts(store, "transport/");
      c.store = &ts;
      auto t = transport::createTransport(c);
      if (!t.isOk()) {
        out.last[r] = t.status();
        return;
      }
      std::unique_ptr<transport::Transport> tr = std::move(*t);
      if (wrap) tr = wrap(std::move(tr), r);
      PrefixStore es(store, "exec/");
      MemoryStore noControl;
      AbortableStore abortable(es, control ? *control : noControl, "abort", 0.05);
      ExecOptions o = optionsFor(r);
      if (control) o.aborted = [&abortable] { return abortable.aborted(); };
      auto ex = RankExecutor::create(s.plan, layouts, w, *tr, abortable, o);
      if (!ex.isOk()) {
        out.last[r] = ex.status();
        return;
      }
      for (int step : steps) out.last[r] = (*ex)->runStep(step, nullptr).status();
      out.served[r] = (*ex)->serving();
      const auto live = (*ex)->liveShard();
      if (!live.empty()) out.digests[r] = shardDigest(layouts[r], live.data());
      (void)storeBarrier(es, "test-end", world, 30 * kTimeScale);
    });
  }
  for (auto& th : threads) th.join();
  out.seconds = clock.seconds();
  return out;
}

ExecOptions shadowOptions() {
  ExecOptions o;
  o.timeoutSeconds = 30 * kTimeScale;
  o.shadowSwitch = true;
  o.generationIntervalSeconds = 0.0005;
  return o;
}

OptionsFor same(const ExecOptions& o) {
  return [o](int) { return o; };
}

// What every inference rank serves: `version` by its label, `bytes` by its digest.
void expectServes(const PlanFixture& s, const workloads::SyntheticWeights& w, const ThreadRun& run,
                  int version, int bytes) {
  auto layouts = orThrow(RankLayout::buildAll(s.plan));
  for (size_t r = 0; r < s.plan.ranks.size(); ++r) {
    if (s.plan.ranks[r].role == plan::Role::kTrainer) continue;
    EXPECT_EQ(run.served[r].version, version) << "rank " << r;
    EXPECT_EQ(run.digests[r], orThrow(expectedShardDigest(w, layouts[r], bytes))) << "rank " << r;
  }
}

// A resumed run starts at an odd version: its live copy is its first, so
// the next update must land in the second (the switch counts from the
// start version; counted from 0, update 4 would write the live copy and
// leave the shadow that is verified and switched to empty).
TEST(ExecutorResume, AtAnOddVersionUpdatesLandInTheShadow) {
  PlanFixture s("p2p", 64 * 1024);
  workloads::SyntheticWeights w(s.inv, {}, workloads::RlConfig{}, 6);
  ExecOptions o = shadowOptions();
  o.startVersion = 3;
  const ThreadRun run = runSteps(s, w, same(o), {4, 5});
  for (const auto& st : run.last) ASSERT_TRUE(st.isOk()) << st.toString();
  expectServes(s, w, run, 5, 5);
}

// The shard a rank held is what it serves on: handed the bytes of version
// 1 as its version 2, it serves exactly those bytes (the executor neither
// reloads nor checks them; the driver's digest check is what would catch
// such a shard), and the next full update replaces them with version 3.
TEST(ExecutorResume, ACarriedShardIsServedAsItIs) {
  PlanFixture s("p2p", 64 * 1024);
  workloads::SyntheticWeights w(s.inv, {}, workloads::RlConfig{}, 3);
  auto layouts = orThrow(RankLayout::buildAll(s.plan));
  std::vector<std::vector<uint8_t>> held(s.plan.ranks.size());
  for (size_t r = 0; r < s.plan.ranks.size(); ++r) {
    held[r].assign(layouts[r].spaceBytes(plan::Space::kInfer), 0);
    for (const auto& p : layouts[r].placed(plan::Space::kInfer)) {
      orThrow(fillExpected(w, p, 1, held[r].data() + p.offset));
    }
  }
  const OptionsFor carried = [&](int r) {
    ExecOptions o = shadowOptions();
    o.startVersion = 2;
    o.resumeShard = held[r].empty() ? nullptr : held[r].data();
    return o;
  };
  expectServes(s, w, runSteps(s, w, carried, {}), 2, 1);
  const ThreadRun next = runSteps(s, w, carried, {3});
  for (const auto& st : next.last) ASSERT_TRUE(st.isOk()) << st.toString();
  expectServes(s, w, next, 3, 3);
}

// The commit gate says no: no rank commits, each serves version 0 intact.
TEST(ExecutorCommitGate, ARefusalLeavesThePreviousVersionLive) {
  PlanFixture s("p2p", 64 * 1024);
  workloads::SyntheticWeights w(s.inv, {}, workloads::RlConfig{}, 2);
  ExecOptions o = shadowOptions();
  std::atomic<int> asked{0};
  o.commitGate = [&](int step) -> Result<bool> {
    EXPECT_EQ(step, 1);
    ++asked;
    return false;
  };
  const ThreadRun run = runSteps(s, w, same(o), {1});
  EXPECT_EQ(asked.load(), static_cast<int>(s.plan.ranks.size())) << "every rank asks";
  for (const auto& st : run.last) EXPECT_EQ(st.code(), Code::kCancelled) << st.toString();
  expectServes(s, w, run, 0, 0);
  o.commitGate = [](int) -> Result<bool> { return true; };
  const ThreadRun yes = runSteps(s, w, same(o), {1, 2});
  for (const auto& st : yes.last) ASSERT_TRUE(st.isOk()) << st.toString();
  expectServes(s, w, yes, 2, 2);
}

// A trainer whose first write fails stops sending: its targets wait in the
// transfer loop for writes that never come, the other ranks at a barrier.
// The supervisor's abort key ends all of them in about a second, not after
// the 120 s timeout, and every inference rank still serves version 0.
TEST(ExecutorAbort, TheSupervisorsAbortEndsEveryWait) {
  PlanFixture s("p2p", 64 * 1024);
  workloads::SyntheticWeights w(s.inv, {}, workloads::RlConfig{}, 1);
  ASSERT_EQ(s.plan.ranks[0].role, plan::Role::kTrainer);
  ExecOptions o = shadowOptions();
  o.timeoutSeconds = 120;
  MemoryStore control;
  const Wrap failFirst = [](std::unique_ptr<transport::Transport> t, int r) {
    if (r != 0) return t;
    transport::fakes::FaultPlan f;
    f.failRequest = 1;  // the first request after setup: update 1's first write
    return std::unique_ptr<transport::Transport>(
        std::make_unique<transport::fakes::FaultyTransport>(std::move(t), f));
  };
  std::thread abort([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(1500 * kTimeScale)));
    (void)control.set("abort", "test: the update is abandoned");
  });
  const ThreadRun run = runSteps(s, w, same(o), {1}, failFirst, &control);
  abort.join();
  EXPECT_EQ(run.last[0].code(), Code::kUnavailable) << run.last[0].toString();
  for (size_t r = 1; r < run.last.size(); ++r) {
    EXPECT_EQ(run.last[r].code(), Code::kCancelled) << r << ": " << run.last[r].toString();
  }
  EXPECT_LT(run.seconds, 60) << "left on the abort, not on the timeout";
  expectServes(s, w, run, 0, 0);
}

}  // namespace
}  // namespace tide::exec
