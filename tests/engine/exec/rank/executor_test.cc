// The real executor with ranks as threads: both strategies over tcp and shm
// move every inference byte bit-exact, a flipped byte is caught and named,
// and box addressing splits strided regions into the right runs.

#include <gtest/gtest.h>

#include <set>

#include "engine/exec/executor/rank_layout.h"
#include "engine/exec/rank/sync_run.h"
#include "engine/plan/reshard.h"
#include "engine/sync/strategy.h"
#include "tests/engine/exec/plan_fixture.h"
#include "workloads/layout.h"
#include "workloads/model.h"
#include "workloads/weights.h"

namespace tide::exec {
namespace {

using Param = std::tuple<std::string, std::string>;  // backend, strategy
constexpr int kLastRank = -2;  // runFp8Once: corrupt the plan's last rank (an inference rank)
constexpr int kNoRank = -1;
class Executor : public ::testing::TestWithParam<Param> {};

const auto kBackendsTimesStrategies =
    ::testing::Combine(::testing::Values("tcp", "shm"), ::testing::Values("p2p", "broadcast"));
std::string paramName(const ::testing::TestParamInfo<Param>& info) {
  return std::get<0>(info.param) + "_" + std::get<1>(info.param);
}

// Two updates of the fixture's plan, poisoned targets: a byte the transfer
// misses cannot pass.
std::vector<StepStats> twoUpdates(const PlanFixture& s, const std::string& backend,
                                  traces::EventSink* events) {
  workloads::SyntheticWeights w(s.inv, {}, workloads::RlConfig{}, 2);
  transport::TransportConfig c;
  c.backend = backend;
  c.streams = 1;
  RankRunOptions o;
  o.steps = 2;
  o.exec.hooks = poisonedTargets();
  o.exec.timeoutSeconds = 30;
  return orThrow(runThreads(s.plan, w, c, o, events));
}

TEST_P(Executor, TwoUpdatesBitExact) {
  const auto& [backend, strategy] = GetParam();
  PlanFixture s(strategy.c_str(), 64 * 1024);
  traces::MemoryEventSink events;
  auto stats = twoUpdates(s, backend, &events);
  ASSERT_EQ(stats.size(), 2u);
  const auto sum = s.plan.summarize();
  uint64_t crossRank = 0;
  for (auto b : sum.sentBytes) crossRank += b;
  for (const auto& st : stats) {
    EXPECT_GT(st.seconds, 0);
    EXPECT_EQ(st.bytes, crossRank);
  }
  // One event per batch and local task per step, all inside the run.
  auto ev = events.events();
  ASSERT_FALSE(ev.empty());
  std::set<int> steps;
  uint64_t evBytes = 0;
  for (const auto& e : ev) {
    EXPECT_LE(e.tStart, e.tEnd);
    EXPECT_GE(e.tStart, 0);
    steps.insert(e.step);
    if (e.src != e.dst && e.step == 1) evBytes += e.bytes;
  }
  EXPECT_EQ(steps, (std::set<int>{1, 2}));
  EXPECT_EQ(evBytes, crossRank);
}

INSTANTIATE_TEST_SUITE_P(Backends, Executor, kBackendsTimesStrategies, paramName);

TEST(ExecutorVerify, FlippedByteIsCaughtAndNamed) {
  for (const char* strategy : {"p2p", "broadcast"}) {
    PlanFixture s(strategy, 64 * 1024);
    workloads::SyntheticWeights w(s.inv, {}, workloads::RlConfig{}, 1);
    transport::TransportConfig c;
    c.backend = "shm";
    RankRunOptions o;
    o.exec.timeoutSeconds = 30;
    const int victim = static_cast<int>(s.plan.ranks.size()) - 1;  // an inference rank
    o.exec.hooks = corruptShardOf(victim);
    auto r = runThreads(s.plan, w, c, o, nullptr);
    ASSERT_FALSE(r.isOk()) << strategy;
    EXPECT_EQ(r.status().code(), Code::kDataLoss);
    const std::string msg = r.status().message();
    EXPECT_NE(msg.find("not bit-exact on rank " + std::to_string(victim)), std::string::npos)
        << msg;
    EXPECT_NE(msg.find("model."), std::string::npos) << msg;  // names the tensor
  }
}

TEST(ExecutorVerify, VersionZeroTargetsAreOverwritten) {
  // Without poison the inference side starts from version 0 (the real case).
  PlanFixture s("p2p", 1 << 20);
  workloads::SyntheticWeights w(s.inv, {}, workloads::RlConfig{}, 1);
  transport::TransportConfig c;
  c.backend = "shm";
  RankRunOptions o;
  auto stats = orThrow(runThreads(s.plan, w, c, o, nullptr));
  EXPECT_EQ(stats.size(), 1u);
}

TEST(RankLayoutTest, StridedBoxRuns) {
  Placed src, dst;
  src.box.ndim = dst.box.ndim = 2;
  src.box.hi = {8, 6};  // rows 0..8, cols 0..6, at offset 100
  src.offset = 100;
  dst.box.lo = {2, 2};
  dst.box.hi = {6, 4};  // rows 2..6, cols 2..4
  plan::RegionBox box = dst.box;
  std::vector<tide::exec::Run> runs;
  boxRuns(box, src, dst, 2, runs);
  ASSERT_EQ(runs.size(), 4u);  // one per row: the source is wider
  EXPECT_EQ(runs[0].srcOffset, 100u + (2 * 6 + 2) * 2);
  EXPECT_EQ(runs[0].dstOffset, 0u);
  EXPECT_EQ(runs[0].bytes, 4u);
  EXPECT_EQ(runs[3].srcOffset, 100u + (5 * 6 + 2) * 2);
  EXPECT_EQ(runs[3].dstOffset, 12u);
  // Whole rows on both sides merge into one run.
  Placed a, b;
  a.box.ndim = b.box.ndim = 2;
  a.box.hi = b.box.hi = {4, 6};
  plan::RegionBox rows;
  rows.ndim = 2;
  rows.lo = {1, 0};
  rows.hi = {3, 6};
  runs.clear();
  boxRuns(rows, a, b, 2, runs);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].srcOffset, 12u);
  EXPECT_EQ(runs[0].bytes, 24u);
}

// FP8 inference weights: the p2p sender quantizes its staging box, the
// broadcast receiver quantizes its slice of the bf16 bucket; every byte and
// scale is checked against the generator quantized block by block.
class ExecutorFp8 : public Executor {};

TEST_P(ExecutorFp8, TwoUpdatesBitExact) {
  const auto& [backend, strategy] = GetParam();
  PlanFixture s(strategy.c_str(), 64 * 1024, workloads::DType::kFP8E4M3);
  auto stats = twoUpdates(s, backend, nullptr);
  ASSERT_EQ(stats.size(), 2u);
  uint64_t fp8 = 0;
  for (const auto& h : s.plan.holdings) fp8 += h.dtype == workloads::DType::kFP8E4M3;
  EXPECT_GT(fp8, 0u) << "the plan has FP8 targets";
}

INSTANTIATE_TEST_SUITE_P(Backends, ExecutorFp8, kBackendsTimesStrategies, paramName);

// One FP8 p2p update of tiny-moe over shm, threads, with `o`'s options.
Result<std::vector<StepStats>> runFp8Once(RankRunOptions o, int corrupt = kNoRank) {
  PlanFixture s("p2p", 64 * 1024, workloads::DType::kFP8E4M3);
  workloads::SyntheticWeights w(s.inv, {}, workloads::RlConfig{}, 1);
  transport::TransportConfig c;
  c.backend = "shm";
  if (corrupt == kLastRank)
    o.exec.hooks = corruptShardOf(static_cast<int>(s.plan.ranks.size()) - 1);
  return runThreads(s.plan, w, c, o, nullptr);
}

TEST(ExecutorVerify, Fp8FlippedByteIsCaught) {
  RankRunOptions o;
  o.exec.timeoutSeconds = 30;
  auto r = runFp8Once(o, kLastRank);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), Code::kDataLoss) << r.status().toString();
}

TEST(ExecutorVerify, Fp8DeltaUpdatesAreRefusedWithReason) {
  RankRunOptions o;
  o.exec.timeoutSeconds = 10;
  o.exec.mode = UpdateMode::kSparse;
  auto r = runFp8Once(o);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), Code::kUnimplemented) << r.status().toString();
  EXPECT_NE(r.status().message().find("FP8"), std::string::npos) << r.status().toString();
}

}  // namespace
}  // namespace tide::exec
