#include "engine/plan/reshard.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "workloads/model.h"

namespace tide::plan {
namespace {

struct Case {
  const char* model;
  const char* train;
  const char* infer;
};

// Layout pairs over TP, PP (incl. uneven stages), CP, DP, EP, ETP, DP-attention.
const Case kCases[] = {
    {"tiny-moe", "tp=2,pp=2,cp=2,ep=4", "engines=2,tp=4,ep=4,dp_attn=2"},
    {"tiny-moe", "tp=4,pp=2,ep=4", "engines=1,tp=8,ep=8,dp_attn=8"},
    {"tiny-moe", "tp=1,pp=3,stages=2:1:1", "engines=2,tp=2,ep=2"},
    {"tiny-moe", "tp=4,ep=2,etp=2", "engines=1,tp=4,ep=2"},
    {"tiny-moe", "tp=2,dp=2,ep=4", "engines=4,tp=1"},
    {"tiny-moe", "tp=2,cp=2,pp=2,ep=2,etp=2", "engines=2,tp=4,ep=4,dp_attn=4"},
    {"tiny-moe", "tp=8,ep=8", "engines=1,tp=2,ep=2"},
    {"tiny-dense", "tp=2,pp=2,dp=2", "engines=2,tp=4"},
    {"tiny-dense", "tp=8", "engines=3,tp=1"},
};

struct Built {
  workloads::ModelInventory inv;
  TransferPlan base;
};

Built build(const Case& c) {
  auto spec = orThrow(workloads::loadModel(c.model));
  auto train = orThrow(workloads::parseTrainLayout(c.train));
  auto infer = orThrow(workloads::parseInferLayout(c.infer));
  orThrow(workloads::validate(train, spec));
  orThrow(workloads::validate(infer, spec));
  Built b{workloads::buildInventory(spec), {}};
  b.base = orThrow(basePlan(b.inv, train, infer, Placement{4, false}));
  return b;
}

// Element-level, independent of the planner's box arithmetic: count how many
// pieces deliver each element of each inference shard.
TEST(Reshard, EveryInferenceElementExactlyOnce) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(std::string(c.model) + " " + c.train + " -> " + c.infer);
    Built b = build(c);
    auto rs = planReshard(b.base);
    ASSERT_TRUE(rs.isOk()) << rs.status().toString();
    // (rank, tensor) -> element counts over the tensor.
    std::map<std::pair<uint32_t, uint32_t>, std::vector<uint8_t>> counts;
    auto flat = [&](uint32_t t, const std::array<uint64_t, kMaxDims>& idx) {
      uint64_t f = 0;
      for (size_t d = 0; d < b.base.tensors[t].shape.size(); ++d) {
        f = f * b.base.tensors[t].shape[d] + idx[d];
      }
      return f;
    };
    auto forEach = [&](const RegionBox& box, auto fn) {
      if (box.empty()) return;
      std::array<uint64_t, kMaxDims> idx{};
      std::copy(box.lo.begin(), box.lo.end(), idx.begin());
      while (true) {
        fn(idx);
        int d = box.ndim - 1;
        for (; d >= 0; --d) {
          if (++idx[d] < box.hi[d]) break;
          idx[d] = box.lo[d];
        }
        if (d < 0) break;
      }
    };
    for (const auto& p : rs->pieces) {
      // Every source really holds the piece in its training shard.
      for (uint32_t s : rs->sourcesOf(p)) {
        bool held = false;
        for (const auto& h : b.base.holdings) {
          held |= h.rank == s && h.space == Space::kTrain && h.tensor == p.tensor &&
                  h.box.contains(p.box);
        }
        ASSERT_TRUE(held) << "source " << s << " lacks " << p.box.toString();
      }
      for (uint32_t r : rs->targetsOf(p)) {
        auto& v = counts[{r, p.tensor}];
        uint64_t n = 1;
        for (auto d : b.base.tensors[p.tensor].shape) n *= d;
        v.resize(n, 0);
        forEach(p.box, [&](const auto& idx) { v[flat(p.tensor, idx)]++; });
      }
    }
    size_t shards = 0;
    for (const auto& h : b.base.holdings) {
      if (h.space != Space::kInfer) continue;
      ++shards;
      auto it = counts.find({h.rank, h.tensor});
      ASSERT_NE(it, counts.end()) << b.base.tensors[h.tensor].name;
      forEach(h.box, [&](const auto& idx) {
        ASSERT_EQ(it->second[flat(h.tensor, idx)], 1)
            << b.base.tensors[h.tensor].name << " rank " << h.rank;
        it->second[flat(h.tensor, idx)] = 0;  // consumed
      });
    }
    for (const auto& [k, v] : counts) {
      for (auto x : v) ASSERT_EQ(x, 0) << "element delivered outside any shard";
    }
    EXPECT_GT(shards, 0u);
  }
}

TEST(Reshard, FailsClosedWhenTrainingLeavesAGap) {
  Built b = build(kCases[0]);
  // Drop every holder of the second half of the first column-split tensor.
  uint32_t victim = 0;
  RegionBox gone;
  for (const auto& h : b.base.holdings) {
    if (h.space == Space::kTrain && h.box.ndim == 2 &&
        h.box.hi[0] - h.box.lo[0] < b.base.tensors[h.tensor].shape[0]) {
      victim = h.tensor;
      gone = h.box;
      break;
    }
  }
  ASSERT_GT(gone.volume(), 0u);
  std::erase_if(b.base.holdings, [&](const Holding& h) {
    return h.space == Space::kTrain && h.tensor == victim && h.box == gone;
  });
  auto rs = planReshard(b.base);
  ASSERT_FALSE(rs.isOk());
  EXPECT_NE(rs.status().message().find(b.base.tensors[victim].name), std::string::npos);
  EXPECT_NE(rs.status().message().find("hold"), std::string::npos) << rs.status().toString();
}

TEST(Reshard, FailsClosedOnPartialOverlapAndMissingTensor) {
  Built b = build(kCases[0]);
  for (auto& h : b.base.holdings) {
    if (h.space == Space::kTrain && h.box.ndim == 2 && h.box.lo[0] > 0) {
      h.box.lo[0] -= 1;  // now overlaps its neighbour partially
      break;
    }
  }
  auto rs = planReshard(b.base);
  ASSERT_FALSE(rs.isOk());
  EXPECT_NE(rs.status().message().find("overlap"), std::string::npos) << rs.status().toString();

  Built c = build(kCases[0]);
  std::erase_if(c.base.holdings,
                [](const Holding& h) { return h.space == Space::kTrain && h.tensor == 0; });
  auto rs2 = planReshard(c.base);
  ASSERT_FALSE(rs2.isOk());
  EXPECT_NE(rs2.status().message().find("no training rank"), std::string::npos);
}

TEST(Reshard, PlacementAndColocation) {
  Built b = build(kCases[0]);
  EXPECT_EQ(b.base.ranks.size(), 16u);
  EXPECT_EQ(b.base.ranks[8].node, 2u);  // 8 trainers on nodes 0-1, inference from node 2
  EXPECT_EQ(b.base.ranks[8].role, Role::kInference);
  EXPECT_EQ(nodesNeeded(b.base, 4), 4);
  auto spec = orThrow(workloads::loadModel("tiny-moe"));
  auto train = orThrow(workloads::parseTrainLayout("tp=2,pp=2,cp=2,ep=4"));
  auto infer = orThrow(workloads::parseInferLayout("engines=2,tp=4,ep=4,dp_attn=2"));
  auto co = orThrow(basePlan(b.inv, train, infer, Placement{8, true}));
  EXPECT_EQ(co.ranks[8].node, 0u);
  EXPECT_EQ(co.ranks[8].gpu, 0u);
  auto bad = orThrow(workloads::parseInferLayout("engines=1,tp=4,ep=4"));
  EXPECT_FALSE(basePlan(b.inv, train, bad, Placement{8, true}).isOk());
}

// basePlan computes an inference rank's shards once per engine-local rank;
// every rank's holdings must still be exactly the shards the layout gives it.
TEST(Reshard, BaseHoldingsAreEachRanksOwnShards) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(std::string(c.model) + " " + c.train + " -> " + c.infer);
    Built b = build(c);
    auto train = orThrow(workloads::parseTrainLayout(c.train));
    auto infer = orThrow(workloads::parseInferLayout(c.infer));
    using Key = std::tuple<uint32_t, Space, uint32_t, std::vector<uint64_t>, std::vector<uint64_t>>;
    std::multiset<Key> want, got;
    const auto nt = static_cast<uint32_t>(train.worldSize());
    auto put = [&](uint32_t rank, Space s, const std::vector<workloads::Shard>& shards) {
      for (const auto& sh : shards) {
        if (sh.box.volume() > 0) want.insert({rank, s, sh.tensor, sh.box.lo, sh.box.hi});
      }
    };
    for (int r = 0; r < train.worldSize(); ++r) {
      put(static_cast<uint32_t>(r), Space::kTrain, workloads::trainShards(b.inv, train, r));
    }
    for (int r = 0; r < infer.worldSize(); ++r) {
      put(nt + static_cast<uint32_t>(r), Space::kInfer, workloads::inferShards(b.inv, infer, r));
    }
    for (const auto& h : b.base.holdings) {
      const auto box = h.box.toBox();
      got.insert({h.rank, h.space, h.tensor, box.lo, box.hi});
    }
    EXPECT_EQ(got, want);
  }
}

}  // namespace
}  // namespace tide::plan
