// The plan's own FP8 conversions timed on this host, and the simulator
// pricing each conversion unit at its measured time on the host's cores.

#include "harness/sim/conversion_probe.h"

#include <gtest/gtest.h>

#include "engine/plan/schedule.h"
#include "sim/plan_lowering.h"
#include "tests/engine/plan/plan_boxes.h"
#include "workloads/cluster.h"

namespace tide::harness {
namespace {

using plan::MoveKind;
using plan::rows;
using plan::Space;
using workloads::DType;

// Two trainers (node 0) each convert half the rows of one 256 x 256 tensor
// to FP8 (block 128) and write it to one inference rank (node 1).
plan::TransferPlan convertingPlan() {
  plan::TransferPlan p;
  p.strategy = "p2p";
  p.ranks = {{0, plan::Role::kTrainer, 0, 0},
             {1, plan::Role::kTrainer, 0, 1},
             {2, plan::Role::kInference, 1, 0}};
  p.tensors = {{0, "w", {256, 256}, DType::kBF16, DType::kFP8E4M3, 128}};
  p.holdings = {{0, Space::kTrain, 0, rows(0, 128, 256), DType::kBF16},
                {1, Space::kTrain, 0, rows(128, 256, 256), DType::kBF16},
                {0, Space::kStaging, 0, rows(0, 128, 256), DType::kFP8E4M3},
                {1, Space::kStaging, 0, rows(128, 256, 256), DType::kFP8E4M3},
                {2, Space::kInfer, 0, rows(0, 256, 256), DType::kFP8E4M3}};
  const uint32_t conv = p.addStage("convert");
  const uint32_t write = p.addStage("write", {plan::Dependency{conv, true}});
  for (uint32_t r = 0; r < 2; ++r) {
    for (const bool local : {true, false}) {
      plan::Move m;
      m.src = r;
      m.dst = local ? r : 2;
      m.box = rows(128 * r, 128 * (r + 1), 256);
      m.srcSpace = local ? Space::kTrain : Space::kStaging;
      m.dstSpace = local ? Space::kStaging : Space::kInfer;
      m.srcDtype = local ? DType::kBF16 : DType::kFP8E4M3;
      m.dstDtype = DType::kFP8E4M3;
      m.kind = local ? MoveKind::kConvert : MoveKind::kWrite;
      m.stage = local ? conv : write;
      p.addMove(m);
    }
  }
  return p;
}

TEST(ConversionProbe, TimesEachConvertingUnitOnly) {
  const plan::TransferPlan p = convertingPlan();
  ASSERT_TRUE(p.validate().isOk()) << p.validate().toString();
  auto s = plan::Schedule::build(p);
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  auto probe = probePlanConversions(p, *s);
  ASSERT_TRUE(probe.isOk()) << probe.status().toString();
  ASSERT_EQ(probe->unitSeconds.size(), s->units.size());
  EXPECT_EQ(probe->units, 2u);
  EXPECT_EQ(probe->shapes, 2u) << "two boxes of one shape: each timed once";
  double sum = 0;
  for (size_t u = 0; u < s->units.size(); ++u) {
    if (s->units[u].converts) {
      EXPECT_GT(probe->unitSeconds[u], 0) << "unit " << u;
    } else {
      EXPECT_EQ(probe->unitSeconds[u], 0) << "unit " << u;
    }
    sum += probe->unitSeconds[u];
  }
  EXPECT_DOUBLE_EQ(probe->seconds, sum);
  EXPECT_GT(probe->bytesPerSecond(), 0);
}

TEST(ConversionProbe, TheSimulatorPricesEachConversionAtItsMeasuredTime) {
  const plan::TransferPlan p = convertingPlan();
  auto s = plan::Schedule::build(p);
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  auto cluster = workloads::parseEmulated("emulated:nodes=2,gpus=2,nic=1GB/s");
  ASSERT_TRUE(cluster.isOk()) << cluster.status().toString();
  sim::LoweringOptions o;
  o.hostConvertBps = 1e9;  // the unit rate: 100 KiB of conversion is ~0.1 ms at it
  o.hostCores = 1;
  auto atRate = sim::simulatePlan(p, *cluster, sim::Calibration{}, o);
  ASSERT_TRUE(atRate.isOk()) << atRate.status().toString();
  EXPECT_LT(atRate->seconds, 0.01);
  // Each conversion measured at 0.2 s: on one core the two take 0.4 s, on
  // two cores 0.2 s, before the writes (~0.1 ms at 1 GB/s).
  o.convertSeconds.assign(s->units.size(), 0.0);
  for (size_t u = 0; u < s->units.size(); ++u)
    if (s->units[u].converts) o.convertSeconds[u] = 0.2;
  auto one = sim::simulatePlan(p, *cluster, sim::Calibration{}, o);
  ASSERT_TRUE(one.isOk()) << one.status().toString();
  EXPECT_NEAR(one->seconds, 0.4, 0.005);
  o.hostCores = 2;
  auto two = sim::simulatePlan(p, *cluster, sim::Calibration{}, o);
  ASSERT_TRUE(two.isOk()) << two.status().toString();
  EXPECT_NEAR(two->seconds, 0.2, 0.005);
}

}  // namespace
}  // namespace tide::harness
