// Sparse p2p and disk-delta on the real executor (ranks as threads, tcp on
// loopback): every update verified bit-exact against the generator, fewer
// bytes than a full update, and a torn delta block in flight stopped before
// any inference byte changes.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "engine/core/clock.h"
#include "engine/exec/rank/sync_run.h"
#include "engine/sync/disk_delta_manifest.h"
#include "tests/engine/exec/plan_fixture.h"
#include "tests/engine/exec/temp_dir.h"
#include "tests/fakes/faulty_transport.h"
#include "tests/sanitizers.h"
#include "workloads/weights.h"

namespace tide::exec {
namespace {

uint64_t crossRankBytes(const plan::TransferPlan& p) {
  uint64_t n = 0;
  for (auto b : p.summarize().sentBytes) n += b;
  return n;
}

transport::TransportConfig tcp() {
  transport::TransportConfig c;
  c.backend = "tcp";
  c.streams = 1;
  return c;
}

RankRunOptions options(UpdateMode mode, double timeoutSeconds, int steps = 1) {
  RankRunOptions o;
  o.steps = steps;
  o.exec.mode = mode;
  o.exec.timeoutSeconds = timeoutSeconds;
  return o;
}

TEST(SparseP2p, ThreeUpdatesBitExactWithFewerBytes) {
  PlanFixture s("p2p", 64 * 1024);
  workloads::SyntheticWeights w(s.inv, {}, workloads::RlConfig{}, 3);
  RankRunOptions o = options(UpdateMode::kSparse, 30, 3);
  traces::MemoryEventSink events;
  auto stats = orThrow(runThreads(s.plan, w, tcp(), o, &events));
  ASSERT_EQ(stats.size(), 3u);
  const uint64_t full = crossRankBytes(s.plan);
  uint64_t evBytes = 0;
  for (const auto& e : events.events()) {
    if (e.src != e.dst && e.step == 2) evBytes += e.bytes;
  }
  for (const auto& st : stats) {
    EXPECT_EQ(st.fullBytes, full) << "step " << st.step;
    EXPECT_EQ(st.elements * 2, full);
    EXPECT_GT(st.changed, 0u);
    EXPECT_LT(st.changed, st.elements);
    // Every block carries a header; still far below the full bytes here.
    EXPECT_LT(st.bytes * 2, st.fullBytes) << "step " << st.step << ": " << st.bytes;
  }
  EXPECT_EQ(evBytes, stats[1].bytes);  // events count what went on the wire
}

TEST(SparseP2p, PoisonTargetsAreRejected) {
  PlanFixture s("p2p", 64 * 1024);
  workloads::SyntheticWeights w(s.inv, {}, workloads::RlConfig{}, 1);
  RankRunOptions o = options(UpdateMode::kSparse, 5);
  o.exec.hooks = poisonedTargets();
  auto r = runThreads(s.plan, w, tcp(), o, nullptr);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << r.status().toString();
}

TEST(SparseP2p, BroadcastPlanIsRejected) {
  PlanFixture s("broadcast", 64 * 1024);
  workloads::SyntheticWeights w(s.inv, {}, workloads::RlConfig{}, 1);
  RankRunOptions o = options(UpdateMode::kSparse, 2);
  auto r = runThreads(s.plan, w, tcp(), o, nullptr);
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("sparse"), std::string::npos) << r.status().toString();
}

TEST(SparseP2p, TornBlockInFlightFailsCleanly) {
  // One byte of trainer rank 0's first delta block arrives flipped: the
  // target rejects the block (payload hash) before applying anything, the
  // update fails with kDataLoss in bounded time, and a retried run completes.
  PlanFixture s("p2p", 64 * 1024);
  workloads::SyntheticWeights w(s.inv, {}, workloads::RlConfig{}, 1);
  RankRunOptions o = options(UpdateMode::kSparse, 5 * tide::testing::kTimeScale);
  o.wrapTransport = [](std::unique_ptr<transport::Transport> t, int rank) {
    if (rank != 0) return t;
    transport::fakes::FaultPlan f;
    f.corruptRequest = 1;
    return std::unique_ptr<transport::Transport>(
        new transport::fakes::FaultyTransport(std::move(t), f));
  };
  Stopwatch sw;
  auto r = runThreads(s.plan, w, tcp(), o, nullptr);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), Code::kDataLoss) << r.status().toString();
  EXPECT_NE(r.status().message().find("sparse: rank"), std::string::npos) << r.status().toString();
  EXPECT_LT(sw.seconds(), 20.0 * tide::testing::kTimeScale);
  o.wrapTransport = nullptr;
  o.exec.timeoutSeconds = 30;  // the retry only has to complete (sanitizer builds are slow)
  auto retry = runThreads(s.plan, w, tcp(), o, nullptr);
  EXPECT_TRUE(retry.isOk()) << retry.status().toString();
}

TEST(DiskDelta, ThreeUpdatesBitExactThroughFiles) {
  PlanFixture s("p2p", 64 * 1024);
  workloads::SyntheticWeights w(s.inv, {}, workloads::RlConfig{}, 3);
  TempDir dir;
  RankRunOptions o = options(UpdateMode::kDiskDelta, 30, 3);
  o.exec.deltaDir = dir.path;
  o.exec.baseEvery = 2;              // version 2 is a full base
  o.exec.hooks = poisonedTargets();  // every needed byte must come from the files
  auto stats = orThrow(runThreads(s.plan, w, tcp(), o, nullptr));
  ASSERT_EQ(stats.size(), 3u);
  for (const auto& st : stats) {
    EXPECT_GT(st.fullBytes, 0u);
    EXPECT_GT(st.bytesRead, 0u);
    EXPECT_GT(st.changed, 0u);
    if (st.step == 2) {
      EXPECT_GE(st.bytes, st.fullBytes);  // a base holds the whole slices
    } else {
      EXPECT_LT(st.bytes * 2, st.fullBytes) << "step " << st.step;
    }
  }
  for (int v = 0; v <= 3; ++v) {
    EXPECT_TRUE(std::filesystem::exists(dir.path + "/" + sync::manifestName(v))) << v;
  }
}

TEST(DiskDelta, NeedsADirectory) {
  PlanFixture s("p2p", 64 * 1024);
  workloads::SyntheticWeights w(s.inv, {}, workloads::RlConfig{}, 1);
  RankRunOptions o = options(UpdateMode::kDiskDelta, 5);
  auto r = runThreads(s.plan, w, tcp(), o, nullptr);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << r.status().toString();
}

}  // namespace
}  // namespace tide::exec
