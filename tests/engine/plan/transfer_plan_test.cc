#include "engine/plan/transfer_plan.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/engine/plan/plan_boxes.h"

namespace tide::plan {
namespace {

using workloads::DType;

// Two trainers (node 0) each hold half the rows of one 8x4 tensor; two
// inference ranks (node 1) need rows [0,6) and [6,8) in FP8, block 4.
TransferPlan tinyPlan() {
  TransferPlan p;
  p.strategy = "test";
  p.ranks = {{0, Role::kTrainer, 0, 0},
             {1, Role::kTrainer, 0, 1},
             {2, Role::kInference, 1, 0},
             {3, Role::kInference, 1, 1}};
  p.tensors = {{0, "w", {8, 4}, DType::kBF16, DType::kFP8E4M3, 4}};
  p.holdings = {{0, Space::kTrain, 0, rows(0, 4, 4), DType::kBF16},
                {1, Space::kTrain, 0, rows(4, 8, 4), DType::kBF16},
                {0, Space::kStaging, 0, rows(0, 4, 4), DType::kFP8E4M3},
                {1, Space::kStaging, 0, rows(4, 8, 4), DType::kFP8E4M3},
                {2, Space::kInfer, 0, rows(0, 6, 4), DType::kFP8E4M3},
                {3, Space::kInfer, 0, rows(6, 8, 4), DType::kFP8E4M3}};
  const uint32_t conv = p.addStage("convert");
  const uint32_t write = p.addStage("write", {Dependency{conv, true}});
  auto add = [&](uint32_t src, uint32_t dst, RegionBox b, Space ss, Space ds, MoveKind k,
                 uint32_t stage) {
    Move m;
    m.src = src;
    m.dst = dst;
    m.box = b;
    m.srcSpace = ss;
    m.dstSpace = ds;
    m.srcDtype = ss == Space::kTrain ? DType::kBF16 : DType::kFP8E4M3;
    m.dstDtype = DType::kFP8E4M3;
    m.kind = k;
    m.stage = stage;
    p.addMove(m);
  };
  add(0, 0, rows(0, 4, 4), Space::kTrain, Space::kStaging, MoveKind::kConvert, conv);
  add(1, 1, rows(4, 8, 4), Space::kTrain, Space::kStaging, MoveKind::kConvert, conv);
  add(0, 2, rows(0, 4, 4), Space::kStaging, Space::kInfer, MoveKind::kWrite, write);
  add(1, 2, rows(4, 6, 4), Space::kStaging, Space::kInfer, MoveKind::kWrite, write);
  add(1, 3, rows(6, 8, 4), Space::kStaging, Space::kInfer, MoveKind::kWrite, write);
  return p;
}

TEST(TransferPlan, ValidTinyPlanAndSummary) {
  TransferPlan p = tinyPlan();
  ASSERT_TRUE(p.validate().isOk()) << p.validate().toString();
  // FP8 bytes: elements + one fp32 scale per touched 4x4 block.
  EXPECT_EQ(p.moves[2].bytes, 16u + 4u);
  EXPECT_EQ(p.moves[3].bytes, 8u + 4u);
  EXPECT_EQ(p.moves[2].path, Path::kNetwork);
  EXPECT_EQ(p.moves[0].path, Path::kLocal);
  PlanSummary s = p.summarize();
  EXPECT_EQ(s.moves, 5u);
  EXPECT_EQ(s.sentBytes[1], 12u + 12u);
  EXPECT_EQ(s.receivedBytes[2], 20u + 12u);
  EXPECT_EQ(s.bytesByKind[static_cast<int>(MoveKind::kWrite)], 44u);
  EXPECT_EQ(s.bytesByPath[static_cast<int>(Path::kLocal)], 40u);
}

TEST(TransferPlan, JsonRoundTrip) {
  TransferPlan p = tinyPlan();
  p.params.options.bucketBytes = 1024;
  p.params.workload.model = "tiny-moe";
  Bucket b;
  b.id = 0;
  b.owner = 0;
  b.stage = 0;
  b.entries.push_back(BucketEntry{0, rows(0, 4, 4), DType::kBF16});
  b.bytes = 32;
  p.buckets.push_back(b);
  const auto j = p.toJson();
  auto back = TransferPlan::fromJson(nlohmann::json::parse(j.dump()));
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_EQ(back->toJson(), j);
  EXPECT_TRUE(back->validate().isOk());
  ASSERT_EQ(back->moves.size(), p.moves.size());
  EXPECT_EQ(back->moves[3].box, p.moves[3].box);
  EXPECT_EQ(back->stages[1].deps[0].perBucket, true);

  auto broken = j;
  broken["schema"] = "tide.plan/0";
  EXPECT_FALSE(TransferPlan::fromJson(broken).isOk());
  broken = j;
  broken["moves"][0][9] = "teleport";
  auto r = TransferPlan::fromJson(broken);
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("teleport"), std::string::npos);
  broken = j;
  broken["ranks"][0].erase("node");
  EXPECT_FALSE(TransferPlan::fromJson(broken).isOk());
  EXPECT_FALSE(TransferPlan::fromJson(nlohmann::json::array()).isOk());
}

std::string failure(const TransferPlan& p) {
  Status s = p.validate();
  EXPECT_FALSE(s.isOk());
  return s.message();
}

TEST(TransferPlan, FailsClosed) {
  {  // a tensor dimension past the boxes' 32-bit coordinates
    TransferPlan p = tinyPlan();
    p.tensors[0].shape[0] = kMaxCoord + 1;
    EXPECT_NE(failure(p).find("2^32"), std::string::npos);
  }
  {  // a byte never written
    TransferPlan p = tinyPlan();
    p.moves.pop_back();
    EXPECT_NE(failure(p).find("never written"), std::string::npos);
  }
  {  // a byte written twice
    TransferPlan p = tinyPlan();
    Move m = p.moves[3];
    m.box = rows(5, 6, 4);
    p.addMove(m);
    EXPECT_NE(failure(p).find("twice"), std::string::npos);
  }
  {  // partially covered
    TransferPlan p = tinyPlan();
    p.moves[3].box = rows(4, 5, 4);
    p.moves[3].bytes = p.regionBytes(0, p.moves[3].box, DType::kFP8E4M3);
    EXPECT_NE(failure(p).find("20 of 24"), std::string::npos);
  }
  {  // source does not hold the region
    TransferPlan p = tinyPlan();
    p.moves[2].src = 1;
    EXPECT_NE(failure(p).find("source does not hold"), std::string::npos);
  }
  {  // bytes lie
    TransferPlan p = tinyPlan();
    p.moves[2].bytes += 1;
    EXPECT_NE(failure(p).find("bytes"), std::string::npos);
  }
  {  // path lies
    TransferPlan p = tinyPlan();
    p.moves[2].path = Path::kIntraNode;
    EXPECT_NE(failure(p).find("path"), std::string::npos);
  }
  {  // stage cycle / forward dependency
    TransferPlan p = tinyPlan();
    p.stages[0].deps.push_back(Dependency{1, false});
    EXPECT_NE(failure(p).find("later stage"), std::string::npos);
  }
  {  // unknown rank
    TransferPlan p = tinyPlan();
    p.moves[2].dst = 9;
    EXPECT_NE(failure(p).find("unknown rank"), std::string::npos);
  }
  {  // box outside the tensor
    TransferPlan p = tinyPlan();
    p.holdings.push_back({3, Space::kInfer, 0, rows(6, 9, 4), DType::kFP8E4M3});
    EXPECT_NE(failure(p).find("outside"), std::string::npos);
  }
  {  // a write that is not a convert but stays on one rank
    TransferPlan p = tinyPlan();
    p.moves[0].kind = MoveKind::kWrite;
    EXPECT_NE(failure(p).find("convert"), std::string::npos);
  }
}

}  // namespace
}  // namespace tide::plan
