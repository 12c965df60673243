// The asynchronous update with a version switch and the elastic join, on
// the real executor (ranks as threads, tcp on loopback): generation keeps
// reading complete versions while updates land in a shadow copy, the pause
// is the swap; a fault in the background leaves the live version serving;
// an engine that joins after step k pulls the READY version under a lease
// and takes part in later steps; a store node lost while a version is
// imported is placed around (or the version is dropped, cleanly).

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "engine/core/clock.h"
#include "engine/exec/executor/version_switch.h"
#include "engine/exec/rank/sync_run.h"
#include "tests/engine/exec/catalog_checks.h"
#include "tests/engine/exec/one_update.h"
#include "tests/engine/exec/plan_fixture.h"
#include "tests/engine/exec/temp_dir.h"
#include "tests/fakes/faulty_transport.h"
#include "tests/sanitizers.h"
#include "workloads/weights.h"

namespace tide::exec {
namespace {

using tide::testing::kTimeScale;

transport::TransportConfig tcp() {
  transport::TransportConfig c;
  c.backend = "tcp";
  c.streams = 1;
  return c;
}

// Writes `byte` over `buf` slowly, in 64 pieces, so generation passes land mid-write.
void slowFill(uint8_t* buf, uint64_t bytes, uint8_t byte) {
  const uint64_t piece = bytes / 64;
  for (uint64_t at = 0; at < bytes; at += piece) {
    std::memset(buf + at, byte, std::min(piece, bytes - at));
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
}

TEST(VersionSwitch, GenerationReadsOnlyCompleteVersionsAcrossSwitches) {
  constexpr uint64_t kBytes = 1 << 20;
  std::vector<uint8_t> a(kBytes, 0), b(kBytes, 0);
  VersionSwitch sw(a.data(), b.data(), kBytes, 0);
  sw.startGeneration(0);
  // Generation is a thread of its own: on a busy machine it may not run for
  // a while, so each point of the test waits (bounded) until it has.
  GenerationStats seen;
  auto until = [&](const std::function<bool()>& done) {
    Deadline d = Deadline::after(30);
    while (!d.expired()) {
      GenerationStats g = sw.takeStats();
      seen.reads += g.reads;
      seen.readsDuringUpdate += g.readsDuringUpdate;
      seen.torn += g.torn;
      seen.versions.insert(g.versions.begin(), g.versions.end());
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return false;
  };
  ASSERT_TRUE(until([&] { return seen.versions.count(0) > 0; })) << "generation never read v0";
  for (int v = 1; v <= 4; ++v) {
    sw.beginUpdate();
    const uint64_t during = seen.readsDuringUpdate;
    slowFill(sw.shadow(), kBytes, static_cast<uint8_t>(v));
    ASSERT_TRUE(until([&] { return seen.readsDuringUpdate > during; }))
        << "generation stopped during update " << v;
    const double pause = sw.switchTo(v);
    EXPECT_LT(pause, 0.01 * kTimeScale) << "the pause is one index swap";
    EXPECT_EQ(sw.serving().version, v);
  }
  // A failed update: the shadow is half written, the live copy serves on.
  sw.beginUpdate();
  std::memset(sw.shadow(), 0xEE, kBytes / 2);
  sw.abortUpdate();
  EXPECT_EQ(sw.serving().version, 4);
  // Reads made before the abort (of v3, during update 4) may still sit in
  // the stats: take them first, then wait for reads of what is served now.
  // On a busy machine the reader may not run again for a while.
  until([] { return true; });
  const uint64_t before = seen.reads;
  ASSERT_TRUE(until([&] { return seen.reads > before + 2 && seen.versions.count(4) > 0; }))
      << "generation stopped, or never read v4 after the abort";
  EXPECT_EQ(seen.torn, 0u);
  EXPECT_TRUE(seen.versions.count(0) && seen.versions.count(4));
  EXPECT_EQ(sw.live()[0], 4);
}

// The check can fail: an update written into the live copy (in place) is
// seen torn by generation.
TEST(VersionSwitch, InPlaceWritesAreSeenTorn) {
  constexpr uint64_t kBytes = 1 << 20;
  std::vector<uint8_t> a(kBytes, 0), b(kBytes, 0);
  VersionSwitch sw(a.data(), b.data(), kBytes, 0);
  sw.startGeneration(0);
  slowFill(sw.live(), kBytes, 7);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_GT(sw.takeStats().torn, 0u);
}

RankRunOptions switchOptions(UpdateMode mode, int steps, double timeoutSeconds) {
  RankRunOptions o;
  o.steps = steps;
  o.exec.mode = mode;
  o.exec.timeoutSeconds = timeoutSeconds;
  o.exec.shadowSwitch = true;
  o.exec.generationIntervalSeconds = 0;
  o.exec.store.replicas = 2;
  o.exec.store.fragmentBytes = 16 * 1024;
  return o;
}

uint64_t inferBytes(const PlanFixture& s) {
  auto layouts = orThrow(RankLayout::buildAll(s.plan));
  uint64_t n = 0;
  for (const auto& l : layouts) n += l.spaceBytes(plan::Space::kInfer);
  return n;
}

// Batches take >= 20 ms, so every update is in flight long enough for generation to read.
std::unique_ptr<transport::Transport> slow(std::unique_ptr<transport::Transport> t, int) {
  transport::fakes::FaultPlan f;
  f.delaySeconds = 0.02;
  return std::make_unique<transport::fakes::FaultyTransport>(std::move(t), f);
}

void expectSwitches(const ExecReport& r, const std::vector<StepStats>& stats,
                    const PlanFixture& s) {
  ASSERT_EQ(r.switches.size(), stats.size());
  EXPECT_EQ(r.shadowBytes, inferBytes(s));
  for (size_t i = 0; i < stats.size(); ++i) {
    const SwitchStep& sw = r.switches[i];
    EXPECT_EQ(sw.step, stats[i].step);
    EXPECT_EQ(sw.tornReads, 0u);
    EXPECT_GT(sw.readsDuringUpdate, 0u) << "step " << sw.step;
    EXPECT_GT(sw.pauseSeconds, 0.0);
    // The update's writes land in the shadow before the pause, which is one
    // index swap: well under half the update. (A tenth failed on a busy
    // machine: a preempted swap took 12 ms of a 57 ms update.)
    EXPECT_LT(sw.pauseSeconds, stats[i].seconds / 2) << "step " << sw.step;
  }
}

void updatesThroughTheShadow(const char* strategy, UpdateMode mode) {
  PlanFixture s(strategy, 64 * 1024);
  workloads::SyntheticWeights w(s.inv, {}, workloads::RlConfig{}, 3);
  ExecReport report;
  RankRunOptions o = switchOptions(mode, 3, 30 * kTimeScale);
  o.exec.report = &report;
  o.wrapTransport = slow;
  auto stats = orThrow(runThreads(s.plan, w, tcp(), o, nullptr));
  expectSwitches(report, stats, s);
}

TEST(ShadowSwitch, P2pUpdatesLandInTheShadowWhileGenerationReads) {
  updatesThroughTheShadow("p2p", UpdateMode::kFull);
}

TEST(ShadowSwitch, BroadcastUpdatesLandInTheShadowWhileGenerationReads) {
  updatesThroughTheShadow("broadcast", UpdateMode::kFull);
}

TEST(ShadowSwitch, StoreUpdatesLandInTheShadowWhileGenerationReads) {
  updatesThroughTheShadow("p2p", UpdateMode::kStore);
}

TEST(ShadowSwitch, DeltaUpdatesAreRefused) {
  PlanFixture s("p2p", 64 * 1024);
  workloads::SyntheticWeights w(s.inv, {}, workloads::RlConfig{}, 1);
  auto r = runThreads(s.plan, w, tcp(), switchOptions(UpdateMode::kSparse, 1, 5), nullptr);
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("switch: a shadow copy takes"), std::string::npos)
      << r.status().toString();
}

// A fault in the background transfer (switch): the update fails and every
// inference rank still serves version 0, which it holds intact. Store: a
// reader's READ flipped in flight; p2p: a trainer's first WRITE flipped.
void faultLeavesTheLiveVersion(UpdateMode mode) {
  PlanFixture s("p2p", 64 * 1024);
  workloads::SyntheticWeights w(s.inv, {}, workloads::RlConfig{}, 1);
  ExecOptions eo = switchOptions(mode, 1, 5 * kTimeScale).exec;
  const plan::Role role =
      mode == UpdateMode::kStore ? plan::Role::kInference : plan::Role::kTrainer;
  int faulty = -1;
  for (size_t r = 0; r < s.plan.ranks.size() && faulty < 0; ++r) {
    if (s.plan.ranks[r].role == role) faulty = static_cast<int>(r);
  }
  ASSERT_GE(faulty, 0);
  // A clean run tells how many requests that rank makes before update 1.
  auto clean = oneUpdate(s, w, eo, faulty, {});
  for (const auto& o : clean) ASSERT_TRUE(o.step.isOk()) << o.step.toString();
  for (const auto& o : clean) EXPECT_TRUE(!o.reader || o.served.version == 1);
  transport::fakes::FaultPlan f;
  f.corruptRequest = clean[faulty].requestsAfterSetup + 1;
  auto torn = oneUpdate(s, w, eo, faulty, f);
  for (size_t r = 0; r < torn.size(); ++r) {
    if (!torn[r].reader) continue;
    EXPECT_FALSE(torn[r].step.isOk()) << r;
    EXPECT_EQ(torn[r].served.version, 0) << "rank " << r << " switched after a failed update";
    EXPECT_TRUE(torn[r].onV0) << "rank " << r << " live copy changed";
  }
  EXPECT_EQ(torn[faulty].step.code(), Code::kDataLoss) << torn[faulty].step.toString();
}

TEST(ShadowSwitch, AFaultDuringABackgroundStoreReadLeavesTheLiveVersion) {
  faultLeavesTheLiveVersion(UpdateMode::kStore);
}

TEST(ShadowSwitch, AFaultDuringBackgroundP2pWritesLeavesTheLiveVersion) {
  faultLeavesTheLiveVersion(UpdateMode::kFull);
}

std::vector<int> lastEngine(const PlanFixture& s) {
  std::vector<int> readers;
  for (size_t r = 0; r < s.plan.ranks.size(); ++r) {
    if (s.plan.ranks[r].role != plan::Role::kTrainer) readers.push_back(static_cast<int>(r));
  }
  return {readers.end() - s.infer.tp, readers.end()};
}

void elasticJoin(bool shadow) {
  PlanFixture s("p2p", 64 * 1024);
  workloads::SyntheticWeights w(s.inv, {}, workloads::RlConfig{}, 4);
  TempDir dir;
  ExecReport report;
  RankRunOptions o = switchOptions(UpdateMode::kStore, 4, 30 * kTimeScale);
  o.exec.shadowSwitch = shadow;
  o.exec.hooks = poisonedTargets();
  o.exec.report = &report;
  o.exec.store.joinStep = 2;
  o.exec.store.joinRanks = lastEngine(s);
  o.exec.store.catalogJson = dir.path + "/catalog.json";
  auto stats = orThrow(runThreads(s.plan, w, tcp(), o, nullptr));
  ASSERT_EQ(stats.size(), 4u);
  const JoinRecord& j = report.join;
  EXPECT_EQ(j.step, 3);
  EXPECT_EQ(j.version, 2) << "the READY version when it joined";
  EXPECT_EQ(j.ranks, o.exec.store.joinRanks);
  EXPECT_GT(j.pullSeconds, 0.0);
  EXPECT_GT(j.seconds, j.pullSeconds) << "then the bit-exact check";
  EXPECT_GT(j.othersSeconds, 0.0);
  auto layouts = orThrow(RankLayout::buildAll(s.plan));
  uint64_t shard = 0;
  for (int r : j.ranks) shard += layouts[r].spaceBytes(plan::Space::kInfer);
  EXPECT_EQ(j.bytes, shard);
  // Before the join its ranks read nothing; from step 3 on, everything.
  EXPECT_LT(stats[1].bytesRead, stats[2].bytesRead);
  EXPECT_EQ(stats[2].bytesRead, stats[3].bytesRead);
  const auto c = readJson(o.exec.store.catalogJson);
  std::string who;
  for (int r : j.ranks) who += " " + std::to_string(r);
  EXPECT_TRUE(hasEvent(c, "v2 leased to a joining engine (ranks" + who + ")")) << c.at("events");
  ASSERT_EQ(c.at("snapshots").size(), 1u) << "v2 collected once the joiners read v3";
  EXPECT_EQ(c.at("snapshots")[0].at("version"), 4);
  if (shadow) {
    ASSERT_EQ(report.switches.size(), 4u);
    for (const auto& sw : report.switches) EXPECT_EQ(sw.tornReads, 0u);
  }
}

TEST(ElasticJoin, AnEngineJoinsAfterStepTwoFromTheStore) {
  elasticJoin(false);
}

TEST(ElasticJoin, AnEngineJoinsWithTheVersionSwitch) {
  elasticJoin(true);
}

// Store updates (no switch) in which node 1 is lost once version 1 is placed.
RankRunOptions lostAtImport(int steps, double timeoutSeconds, const TempDir& dir) {
  RankRunOptions o = switchOptions(UpdateMode::kStore, steps, timeoutSeconds);
  o.exec.shadowSwitch = false;
  o.exec.store.catalogJson = dir.path + "/catalog.json";
  o.exec.store.loseNode = 1;
  o.exec.store.loseStep = 1;
  o.exec.store.loseDuringImport = true;
  return o;
}

TEST(StoreImport, ANodeLostWhileImportingIsPlacedAround) {
  PlanFixture s("p2p", 64 * 1024);
  workloads::SyntheticWeights w(s.inv, {}, workloads::RlConfig{}, 2);
  TempDir dir;
  RankRunOptions o = lostAtImport(2, 20 * kTimeScale, dir);
  o.exec.hooks = poisonedTargets();
  auto stats = runThreads(s.plan, w, tcp(), o, nullptr);
  ASSERT_TRUE(stats.isOk()) << stats.status().toString();
  const auto c = readJson(o.exec.store.catalogJson);
  EXPECT_FALSE(c.at("live")[1].get<bool>());
  EXPECT_TRUE(hasEvent(c, "node 1 lost (while importing v1)")) << c.at("events");
  EXPECT_TRUE(hasEvent(c, "v1 IMPORTING (placed again, attempt 1)")) << c.at("events");
  EXPECT_TRUE(hasEvent(c, "v0 DEGRADED")) << c.at("events");
  expectNewestReadyWithout(c, 2, 1);
}

TEST(StoreImport, ANodeLostWithNoRoomLeftDropsTheVersionCleanly) {
  PlanFixture s("p2p", 64 * 1024);
  workloads::SyntheticWeights w(s.inv, {}, workloads::RlConfig{}, 1);
  TempDir dir;
  RankRunOptions o = lostAtImport(1, 10 * kTimeScale, dir);
  o.exec.store.nodes = 2;  // two replicas on two nodes: none to spare
  Stopwatch sw;
  auto r = runThreads(s.plan, w, tcp(), o, nullptr);
  ASSERT_FALSE(r.isOk());
  EXPECT_LT(sw.seconds(), o.exec.timeoutSeconds) << "readers are told, they do not time out";
  EXPECT_NE(r.status().message().find("was not stored"), std::string::npos)
      << r.status().toString();
  const auto c = readJson(o.exec.store.catalogJson);
  ASSERT_EQ(c.at("snapshots").size(), 1u) << c.dump(1);
  EXPECT_EQ(c.at("snapshots")[0].at("version"), 0);
  EXPECT_EQ(c.at("snapshots")[0].at("state"), "DEGRADED");
  EXPECT_FALSE(c.at("live")[1].get<bool>());
}

}  // namespace
}  // namespace tide::exec
