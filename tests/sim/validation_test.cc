// tide validate's comparison on a synthetic real-run JSON (the real executor's
// tide.sync/1 result), and a small plan run through the simulator.

#include "sim/validation.h"

#include <gtest/gtest.h>

#include "sim/plan_lowering.h"

namespace tide::sim {
namespace {

nlohmann::json realRun(std::vector<double> secs, double bytes) {
  nlohmann::json steps = nlohmann::json::array();
  for (double s : secs) steps.push_back({{"seconds", s}, {"bytes", bytes}});
  return {{"schema", "tide.sync/1"},
          {"strategy", "p2p"},
          {"steps", steps},
          {"lower_bound_seconds", 0.5},
          {"verified", true}};
}

TEST(Validation, ErrorPerStepAndVerdict) {
  auto v = compareWithReal(realRun({1.0, 1.1}, 100), 1.05, 100);
  ASSERT_TRUE(v.isOk()) << v.status().toString();
  ASSERT_EQ(v->steps.size(), 2u);
  EXPECT_NEAR(v->steps[0].error, 0.05, 1e-12);
  EXPECT_NEAR(v->steps[1].error, 1.05 / 1.1 - 1, 1e-12);
  EXPECT_TRUE(v->pass);
  auto far = compareWithReal(realRun({1.0}, 100), 1.5, 100);
  ASSERT_TRUE(far.isOk());
  EXPECT_FALSE(far->pass);
}

TEST(Validation, LocalBytesCountTowardsThePlan) {
  // tide sync reports network bytes and local copies apart; the plan's total
  // has both.
  auto j = realRun({1.0}, 70);
  j["steps"][0]["local_bytes"] = 30;
  EXPECT_TRUE(compareWithReal(j, 1.0, 100).isOk());
  EXPECT_FALSE(compareWithReal(realRun({1.0}, 70), 1.0, 100).isOk());
}

TEST(Validation, RejectsForeignOrUncheckedRuns) {
  auto j = realRun({1.0}, 100);
  j["verified"] = false;
  EXPECT_FALSE(compareWithReal(j, 1.0, 100).isOk());
  j = realRun({1.0}, 100);
  j["schema"] = "other/1";
  EXPECT_FALSE(compareWithReal(j, 1.0, 100).isOk());
  EXPECT_FALSE(compareWithReal(realRun({}, 100), 1.0, 100).isOk());
  EXPECT_FALSE(compareWithReal(realRun({1.0}, 100), 1.0, 200).isOk());  // another plan
  EXPECT_FALSE(compareWithReal(realRun({-1.0}, 100), 1.0, 100).isOk());
}

TEST(PlanLowering, OneWriteRunsAtTheEmulatedNicRate) {
  plan::TransferPlan p;
  p.strategy = "p2p";
  p.ranks = {{0, plan::Role::kTrainer, 0, 0}, {1, plan::Role::kInference, 1, 0}};
  plan::TensorInfo t;
  t.id = 0;
  t.name = "w";
  t.shape = {1024, 1024};
  p.tensors.push_back(t);
  auto box = plan::RegionBox::from(workloads::Box{{0, 0}, {1024, 1024}});
  ASSERT_TRUE(box.isOk()) << box.status().toString();
  p.holdings.push_back({0, plan::Space::kTrain, 0, *box, workloads::DType::kBF16});
  p.holdings.push_back({1, plan::Space::kInfer, 0, *box, workloads::DType::kBF16});
  uint32_t st = p.addStage("write");
  plan::Move m;
  m.src = 0;
  m.dst = 1;
  m.tensor = 0;
  m.box = *box;
  m.srcSpace = plan::Space::kTrain;
  m.dstSpace = plan::Space::kInfer;
  m.kind = plan::MoveKind::kWrite;
  m.stage = st;
  p.addMove(m);
  auto cluster = workloads::parseEmulated("emulated:nodes=2,gpus=1,nic=1GB/s");
  ASSERT_TRUE(cluster.isOk()) << cluster.status().toString();
  auto r = simulatePlan(p, *cluster);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  // 2 MiB of TCP payload at 1448/1514 of 1 GB/s (Ethernet frames metered by
  // the shaper) plus one fabric latency.
  EXPECT_NEAR(r->seconds, 2.0 * 1024 * 1024 / (1e9 * 1448 / 1514), 1e-4);
  EXPECT_EQ(r->events.size(), 1u);
}

}  // namespace
}  // namespace tide::sim
