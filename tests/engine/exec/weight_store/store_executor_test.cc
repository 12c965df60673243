// The weight-store strategy on the real executor (ranks as threads, tcp on
// loopback): trainers write versioned snapshots into the ranks' store
// segments, inference ranks read exactly their runs back, every update
// verified bit-exact; a store node lost mid-read is read around and
// re-replicated; a torn read fails with kDataLoss and leaves no inference
// rank on a mix of versions.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "engine/core/clock.h"
#include "engine/exec/rank/sync_run.h"
#include "engine/exec/weight_store/store_layout.h"
#include "engine/sync/store/catalog_json.h"
#include "tests/engine/exec/catalog_checks.h"
#include "tests/engine/exec/one_update.h"
#include "tests/engine/exec/plan_fixture.h"
#include "tests/engine/exec/temp_dir.h"
#include "tests/fakes/faulty_transport.h"
#include "workloads/weights.h"

namespace tide::exec {
namespace {

constexpr uint64_t kFragment = 16 * 1024;

transport::TransportConfig tcp() {
  transport::TransportConfig c;
  c.backend = "tcp";
  c.streams = 1;
  return c;
}

RankRunOptions options(double timeoutSeconds, int steps, const std::string& catalog) {
  RankRunOptions o;
  o.steps = steps;
  o.exec.mode = UpdateMode::kStore;
  o.exec.timeoutSeconds = timeoutSeconds;
  o.exec.store.replicas = 2;
  o.exec.store.fragmentBytes = kFragment;
  o.exec.store.catalogJson = catalog;
  return o;
}

uint64_t sliceTotal(const PlanFixture& s) {
  auto layouts = orThrow(RankLayout::buildAll(s.plan));
  auto l = orThrow(StoreLayout::build(s.plan, layouts, 0, 2, kFragment, 0));
  uint64_t n = 0;
  for (uint64_t b : l.sliceBytes) n += b;
  return n;
}

TEST(StoreStrategy, ThreeUpdatesBitExactThroughTheStore) {
  PlanFixture s("p2p", 64 * 1024);
  workloads::SyntheticWeights w(s.inv, {}, workloads::RlConfig{}, 3);
  TempDir dir;
  RankRunOptions o = options(30, 3, dir.path + "/catalog.json");
  o.exec.hooks = poisonedTargets();  // every needed byte must come from the store
  auto stats = orThrow(runThreads(s.plan, w, tcp(), o, nullptr));
  ASSERT_EQ(stats.size(), 3u);
  const uint64_t slices = sliceTotal(s);
  uint64_t needed = 0;
  for (auto b : s.plan.summarize().sentBytes) needed += b;
  for (const auto& st : stats) {
    EXPECT_EQ(st.bytes, 2 * slices) << "every slice byte written to two replicas";
    EXPECT_EQ(st.bytesRead, needed) << "readers fetch exactly what full p2p would send";
  }
  const auto j = readJson(dir.path + "/catalog.json");
  ASSERT_EQ(j.at("snapshots").size(), 1u) << j.dump(1);  // 0..2 collected
  const auto& snap = j.at("snapshots")[0];
  EXPECT_EQ(snap.at("version"), 3);
  EXPECT_EQ(snap.at("state"), "READY");
  EXPECT_GT(snap.at("leases").get<int>(), 0);
  EXPECT_EQ(snap.at("bytes").get<uint64_t>(), slices);
  EXPECT_TRUE(sync::store::checkSnapshotJson(snap).isOk());
  for (const auto& f : snap.at("fragments")) {
    ASSERT_EQ(f.at("replicas").size(), 2u);
    EXPECT_NE(f.at("replicas")[0].at("node"), f.at("replicas")[1].at("node"));
  }
}

TEST(StoreStrategy, StoreNodeLostMidReadIsReadAroundAndReReplicated) {
  PlanFixture s("p2p", 64 * 1024);
  workloads::SyntheticWeights w(s.inv, {}, workloads::RlConfig{}, 2);
  TempDir dir;
  RankRunOptions o = options(20, 2, dir.path + "/catalog.json");
  o.exec.store.loseNode = 1;  // after version 1 is committed, before it is read
  o.exec.store.loseStep = 1;
  Stopwatch sw;
  auto stats = runThreads(s.plan, w, tcp(), o, nullptr);
  ASSERT_TRUE(stats.isOk()) << stats.status().toString() << "\n"
                            << readJson(dir.path + "/catalog.json").dump(1);
  EXPECT_LT(sw.seconds(), 60.0);
  const auto j = readJson(dir.path + "/catalog.json");
  EXPECT_FALSE(j.at("live")[1].get<bool>());
  EXPECT_GT(j.at("failovers").get<int>(), 0);
  EXPECT_GT(j.at("repaired_bytes").get<uint64_t>(), 0u);
  std::vector<std::string> events = j.at("events");
  auto has = [&](const std::string& e) {
    return std::find(events.begin(), events.end(), e) != events.end();
  };
  EXPECT_TRUE(has("node 1 lost (reported by readers of v1)")) << j.at("events").dump();
  EXPECT_TRUE(has("v1 DEGRADED")) << j.at("events").dump();
  EXPECT_TRUE(has("v1 READY (re-replicated)")) << j.at("events").dump();
  expectNewestReadyWithout(j, 2, 1);
}

TEST(StoreStrategy, TornReadFailsWithDataLossAndNoRankOnAMix) {
  PlanFixture s("p2p", 64 * 1024);
  workloads::SyntheticWeights w(s.inv, {}, workloads::RlConfig{}, 1);
  ExecOptions eo = options(5, 1, "").exec;
  int reader = -1;
  for (size_t r = 0; r < s.plan.ranks.size() && reader < 0; ++r) {
    if (s.plan.ranks[r].role != plan::Role::kTrainer) reader = static_cast<int>(r);
  }
  ASSERT_GE(reader, 0);
  // A clean run tells how many requests the reader makes before update 1
  // (placement is deterministic), so the fault hits its first read of it.
  auto clean = oneUpdate(s, w, eo, reader, {});
  for (const auto& o : clean) ASSERT_TRUE(o.step.isOk()) << o.step.toString();
  transport::fakes::FaultPlan f;
  f.corruptRequest = clean[reader].requestsAfterSetup + 1;
  Stopwatch sw;
  auto torn = oneUpdate(s, w, eo, reader, f);
  EXPECT_LT(sw.seconds(), 30.0);
  EXPECT_EQ(torn[reader].step.code(), Code::kDataLoss) << torn[reader].step.toString();
  EXPECT_NE(torn[reader].step.message().find("torn or corrupted"), std::string::npos)
      << torn[reader].step.toString();
  EXPECT_TRUE(torn[reader].onV0) << "the failed reader keeps its previous version";
  for (size_t r = 0; r < torn.size(); ++r) {
    if (torn[r].reader) {
      EXPECT_TRUE(torn[r].onV0 || torn[r].onV1) << "rank " << r << " is a mix";
    }
  }
  // The retried update completes.
  auto retry = oneUpdate(s, w, eo, -1, {});
  for (size_t r = 0; r < retry.size(); ++r) {
    EXPECT_TRUE(retry[r].step.isOk()) << r << ": " << retry[r].step.toString();
    if (retry[r].reader) {
      EXPECT_TRUE(retry[r].onV1) << r;
    }
  }
}

TEST(StoreStrategy, BadConfigurationsFailClearly) {
  PlanFixture s("p2p", 64 * 1024);
  workloads::SyntheticWeights w(s.inv, {}, workloads::RlConfig{}, 1);
  RankRunOptions o = options(5, 1, "");
  o.exec.store.replicas = 100;
  auto r = runThreads(s.plan, w, tcp(), o, nullptr);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << r.status().toString();
  PlanFixture b("broadcast", 64 * 1024);
  o = options(2, 1, "");
  r = runThreads(b.plan, w, tcp(), o, nullptr);
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("p2p plan"), std::string::npos) << r.status().toString();
}

TEST(StoreRecords, RoundTripAndRejectGarbage) {
  CommitRecord c;
  c.manifestHash = 42;
  c.manifest = "tide-snapshot v1\nversion 1\nfragments 2\n0 10 7\n1 5 9\n";
  c.placement.replicas = {{{0, 0}, {1, 64}}, {{2, 128}, {0, 64}}};
  c.groups[{4, 3}] = 99;
  const std::string text = encodeCommit(c);
  CommitRecord d = orThrow(decodeCommit(text, 2));
  EXPECT_EQ(d.manifestHash, 42u);
  EXPECT_EQ(d.manifest, c.manifest);
  EXPECT_EQ(d.placement.replicas, c.placement.replicas);
  EXPECT_EQ(d.groups, c.groups);
  EXPECT_EQ(decodeCommit(text, 3).status().code(), Code::kDataLoss);  // fragment count
  for (size_t cut : {size_t{0}, size_t{5}, text.size() / 2, text.size() - 3}) {
    EXPECT_EQ(decodeCommit(text.substr(0, cut), 2).status().code(), Code::kDataLoss) << cut;
  }
  EXPECT_EQ(decodeHashes("F 2 1").status().code(), Code::kDataLoss);
  EXPECT_EQ(decodeHashes("F 99999999999999 1").status().code(), Code::kDataLoss);
  EXPECT_EQ(decodeCommit("M 1 99999999999999\nx", 1).status().code(), Code::kDataLoss);
  EXPECT_EQ(decodePlacement("P 1\n0\n", 1).status().code(), Code::kDataLoss);  // no replica
}

}  // namespace
}  // namespace tide::exec
