// A first update's registration, as the plan says and as the executor does
// it: tide's strategies count one register step per rank in pages of the
// buffers the executor lays out, and the executor registers exactly those
// bytes, timed, and reports them from every rank.

#include <gtest/gtest.h>

#include "engine/exec/executor/rank_layout.h"
#include "engine/exec/executor/step_support.h"
#include "engine/exec/rank/sync_run.h"
#include "engine/plan/rank_buffers.h"
#include "tests/engine/exec/plan_fixture.h"
#include "workloads/weights.h"

namespace tide::exec {
namespace {

using SetupParam = std::tuple<std::string, workloads::DType>;
class SetupWork : public ::testing::TestWithParam<SetupParam> {};

constexpr uint64_t kPage = 4096;

TEST_P(SetupWork, RegisterStepsCountTheBuffersTheExecutorLaysOut) {
  const auto& [strategy, dtype] = GetParam();
  PlanFixture s(strategy.c_str(), 64 * 1024, dtype, /*firstUpdate=*/true);
  PlanFixture later(strategy.c_str(), 64 * 1024, dtype);
  EXPECT_TRUE(later.plan.work.empty());  // not a first update: nothing to pin
  auto layouts = orThrow(RankLayout::buildAll(s.plan));
  const auto buffers = plan::rankBuffers(s.plan);
  std::vector<double> pages(s.plan.ranks.size(), 0);
  for (const auto& st : s.plan.work.steps) {
    ASSERT_EQ(st.kind, plan::StepKind::kRegister);
    EXPECT_EQ(s.plan.work.stageNames[st.stage], plan::kStageRegister);
    EXPECT_EQ(pages[st.rank], 0) << "two register steps on rank " << st.rank;
    pages[st.rank] = st.count;
    EXPECT_EQ(st.bytes, static_cast<double>(buffers[st.rank].total()));
  }
  for (size_t r = 0; r < layouts.size(); ++r) {
    uint64_t want = 0;
    for (int sp = 0; sp < kSpaceCount; ++sp) {
      const uint64_t b = layouts[r].spaceBytes(static_cast<plan::Space>(sp));
      EXPECT_EQ(buffers[r].bytes[sp], b) << "rank " << r << " space " << sp;
      want += (b + kPage - 1) / kPage;
    }
    EXPECT_EQ(pages[r], static_cast<double>(want)) << "rank " << r;
  }
}

TEST_P(SetupWork, EveryRankRegistersWhatItsStepCountsAndTimesIt) {
  const auto& [strategy, dtype] = GetParam();
  PlanFixture s(strategy.c_str(), 64 * 1024, dtype, /*firstUpdate=*/true);
  workloads::SyntheticWeights w(s.inv, {}, workloads::RlConfig{}, 1);
  transport::TransportConfig c;
  c.backend = "shm";
  RankRunOptions o;
  o.steps = 1;
  o.exec.timeoutSeconds = 60;
  SetupStats setup;
  o.setup = &setup;
  orThrow(runThreads(s.plan, w, c, o, nullptr));
  const auto buffers = plan::rankBuffers(s.plan);
  ASSERT_EQ(setup.ranks.size(), s.plan.ranks.size());
  for (size_t r = 0; r < buffers.size(); ++r) {
    uint32_t spaces = 0;
    for (uint64_t b : buffers[r].bytes) spaces += b > 0;
    EXPECT_EQ(setup.ranks[r].registeredBytes, buffers[r].total()) << "rank " << r;
    EXPECT_EQ(setup.ranks[r].registrations, spaces) << "rank " << r;
    EXPECT_GE(setup.ranks[r].registerSeconds, 0);
    if (spaces > 0) {
      EXPECT_GT(setup.ranks[r].registerSeconds, 0) << "rank " << r;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(TideStrategies, SetupWork,
                         ::testing::Combine(::testing::Values("p2p", "broadcast"),
                                            ::testing::Values(workloads::DType::kBF16,
                                                              workloads::DType::kFP8E4M3)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" +
                                  workloads::dtypeName(std::get<1>(info.param));
                         });

TEST(StepSupport, HostStepsArePerformedAndGpuStepsSayWhyNot) {
  EXPECT_EQ(whyNotPerformed(plan::StepKind::kRegister), "");
  EXPECT_NE(whyNotPerformed(plan::StepKind::kDeviceToHost).find("no GPU"), std::string::npos);
  EXPECT_NE(whyNotPerformed(plan::StepKind::kDevicePass).find("no GPU"), std::string::npos);
  EXPECT_NE(whyNotPerformed(plan::StepKind::kAllGather).find("no GPU"), std::string::npos);
  for (int k = 0; k < plan::kStepKindCount; ++k)
    EXPECT_NE(whyNotPerformed(static_cast<plan::StepKind>(k)), "unknown step kind");
}

}  // namespace
}  // namespace tide::exec
