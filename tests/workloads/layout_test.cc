#include "workloads/layout.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <vector>

namespace tide::workloads {
namespace {

// Every element of every tensor must be owned by at least one rank, and the
// copies of each element must match the replication the layout implies.
template <typename ShardFn>
std::map<uint32_t, uint64_t> ownedVolume(int world, ShardFn fn) {
  std::map<uint32_t, uint64_t> v;
  for (int r = 0; r < world; ++r) {
    for (const Shard& s : fn(r)) v[s.tensor] += s.box.volume();
  }
  return v;
}

TEST(Layout, ParseAndValidateKimiK2Run) {
  auto m = orThrow(loadModel("kimi-k2"));
  auto t = orThrow(parseTrainLayout("tp=8,pp=8,cp=4,ep=32,etp=1"));
  auto i = orThrow(parseInferLayout("engines=8,tp=32,ep=32,dp_attn=8"));
  EXPECT_TRUE(validate(t, m, 256).isOk()) << validate(t, m, 256).toString();
  EXPECT_TRUE(validate(i, m, 256).isOk()) << validate(i, m, 256).toString();
  EXPECT_EQ(stageLayerCounts(t, 61), (std::vector<int>{8, 8, 8, 8, 8, 8, 8, 5}));
  EXPECT_EQ(t.edp(), 1);
  EXPECT_EQ(i.attnTp(), 4);
  EXPECT_FALSE(validate(t, m, 128).isOk());
}

TEST(Layout, RejectsWithReason) {
  auto m = orThrow(loadModel("kimi-k2"));
  auto bad = [&](const char* text) {
    auto l = orThrow(parseTrainLayout(text));
    Status s = validate(l, m);
    EXPECT_FALSE(s.isOk()) << text;
    return s.message();
  };
  EXPECT_NE(bad("tp=8,ep=5,dp=5").find("experts"), std::string::npos);
  EXPECT_NE(bad("tp=3").find("heads"), std::string::npos);
  EXPECT_NE(bad("tp=8,ep=16").find("does not divide"), std::string::npos);
  EXPECT_NE(bad("pp=8,stages=8:8:8:8:8:8:8:4").find("sum"), std::string::npos);
  EXPECT_FALSE(parseTrainLayout("tp=8,xx=2").isOk());
  EXPECT_FALSE(parseTrainLayout("tp=0").isOk());
  EXPECT_FALSE(parseTrainLayout("tp=8,tp=4").isOk());
  EXPECT_FALSE(parseTrainLayout("tp").isOk());
  EXPECT_FALSE(parseInferLayout("engines=2,tp=-1").isOk());
  EXPECT_FALSE(parseInferLayout("tp=8,dp_lm_head=2").isOk());
  EXPECT_FALSE(parseInferLayout("tp=8,dense_tp=4").isOk());
  EXPECT_TRUE(
      validate(orThrow(parseInferLayout("tp=8,dense_tp=1")), orThrow(loadModel("tiny-moe")), 8)
          .isOk());
  EXPECT_FALSE(
      validate(orThrow(parseInferLayout("tp=8,dense_tp=1")), orThrow(loadModel("tiny-dense")), 8)
          .isOk());
  auto inf = orThrow(parseInferLayout("tp=32,ep=32,dp_attn=3"));
  EXPECT_FALSE(validate(inf, m).isOk());
}

TEST(Layout, TrainShardsCoverEveryTensorOnce) {
  auto m = orThrow(loadModel("tiny-moe"));
  ModelInventory inv = buildInventory(m);
  auto l = orThrow(parseTrainLayout("tp=2,pp=2,cp=2,ep=4,etp=1,dp=1"));
  ASSERT_TRUE(validate(l, m, 8).isOk()) << validate(l, m, 8).toString();
  auto v = ownedVolume(l.worldSize(), [&](int r) { return trainShards(inv, l, r); });
  for (uint32_t t = 0; t < inv.tensors.size(); ++t) {
    const auto& ts = inv.tensors[t];
    uint64_t copies = ts.kind == TensorKind::kRoutedExpert
                          ? static_cast<uint64_t>(l.edp())  // EDP replicas
                          : static_cast<uint64_t>(l.cp * l.dp) *
                                (ts.tp == TpSplit::kReplicated ? l.tp : 1);  // CP/DP replicas
    EXPECT_EQ(v[t], ts.numel() * copies) << ts.name;
  }
  // Rank 0 is (tp 0, cp 0, pp 0): it holds the embedding's first vocab half.
  auto s0 = trainShards(inv, l, 0);
  ASSERT_FALSE(s0.empty());
  EXPECT_EQ(inv.tensors[s0[0].tensor].kind, TensorKind::kEmbedding);
  EXPECT_EQ(s0[0].box.hi[0], m.vocab / 2);
  TrainCoord c = trainCoord(l, 5);  // 5 = tp 1 + 2*(cp 0) + 4*(pp 1)
  EXPECT_EQ(c.tp, 1);
  EXPECT_EQ(c.cp, 0);
  EXPECT_EQ(c.pp, 1);
  EXPECT_EQ(c.ep, 1);
}

TEST(Layout, InferShardsDpAttention) {
  // SGLang with DP-attention: attention split over tp/dp_attn (one copy per
  // DP group), the embedding whole on every rank; --enable-dp-lm-head splits
  // the lm_head like attention, --moe-dense-tp-size 1 keeps dense MLPs whole.
  auto m = orThrow(loadModel("tiny-moe"));
  ModelInventory inv = buildInventory(m);
  for (bool flags : {false, true}) {
    auto l =
        orThrow(parseInferLayout(flags ? "engines=2,tp=8,ep=8,dp_attn=2,dp_lm_head=1,dense_tp=1"
                                       : "engines=2,tp=8,ep=8,dp_attn=2"));
    ASSERT_TRUE(validate(l, m, 16).isOk()) << validate(l, m, 16).toString();
    auto v = ownedVolume(l.worldSize(), [&](int r) { return inferShards(inv, l, r); });
    int denseMlps = 0;
    for (uint32_t t = 0; t < inv.tensors.size(); ++t) {
      const auto& ts = inv.tensors[t];
      uint64_t perEngine = 1;
      if (ts.kind == TensorKind::kRoutedExpert) {
        perEngine = 1;
      } else if (ts.tp == TpSplit::kReplicated || ts.kind == TensorKind::kEmbedding) {
        perEngine = 8;
      } else if (ts.dpAttnReplicated || (flags && ts.kind == TensorKind::kLmHead)) {
        perEngine = 2;
      } else if (flags && ts.kind == TensorKind::kDenseMlp) {
        perEngine = 8;
        ++denseMlps;
      }
      EXPECT_EQ(v[t], ts.numel() * 2 * perEngine) << ts.name << (flags ? " (flags)" : "");
      // One rank's share: an expert's 1/8 on average, else 1/(slices).
      double share = ts.kind == TensorKind::kRoutedExpert ? 1.0 : static_cast<double>(perEngine);
      EXPECT_DOUBLE_EQ(inferFraction(ts, l) * 8, share) << ts.name;
      // The engine's ranks hold 8 / perEngine different slices, not one.
      if (ts.kind == TensorKind::kRoutedExpert) continue;
      std::set<std::vector<uint64_t>> slices;
      for (int r = 0; r < 8; ++r) {
        for (const Shard& sh : inferShards(inv, l, r)) {
          if (sh.tensor == t) slices.insert(sh.box.lo);
        }
      }
      EXPECT_EQ(slices.size(), 8 / perEngine) << ts.name;
    }
    if (flags) {
      EXPECT_GT(denseMlps, 0);
    }
  }
  EXPECT_EQ(orThrow(parseInferLayout("tp=8,dp_attn=2,dp_lm_head=1,dense_tp=1")).toString(),
            "engines=1,tp=8,ep=1,dp_attn=2,dp_lm_head=1,dense_tp=1");
  // q_b_proj splits by whole heads over tp/dp_attn = 4 ranks.
  auto q = inv.find("model.layers.1.self_attn.q_b_proj.weight");
  ASSERT_GE(q, 0);
  Box b = tpSlice(inv.tensors[q], 1, 4);
  EXPECT_EQ(b.lo[0], 2 * (m.qkNopeHeadDim + m.qkRopeHeadDim));
}

TEST(Layout, GqaKvHeadsReplicateWhenTpExceedsThem) {
  auto m = orThrow(loadModel("tiny-dense"));  // 8 heads, 2 kv heads
  ModelInventory inv = buildInventory(m);
  auto k = inv.find("model.layers.0.self_attn.k_proj.weight");
  ASSERT_GE(k, 0);
  Box b3 = tpSlice(inv.tensors[k], 3, 8);  // rank 3 of 8 -> kv head 0
  Box b4 = tpSlice(inv.tensors[k], 4, 8);  // rank 4 -> kv head 1
  EXPECT_EQ(b3.lo[0], 0u);
  EXPECT_EQ(b3.hi[0], m.headDim);
  EXPECT_EQ(b4.lo[0], m.headDim);
}

TEST(Box, IntersectAndContains) {
  Box a{{0, 0}, {4, 8}}, b{{2, 6}, {6, 10}};
  auto i = intersect(a, b);
  ASSERT_TRUE(i.has_value());
  EXPECT_EQ(*i, (Box{{2, 6}, {4, 8}}));
  EXPECT_EQ(i->volume(), 4u);
  EXPECT_TRUE(a.contains(*i));
  EXPECT_FALSE(a.contains(b));
  EXPECT_FALSE(intersect(a, Box{{4, 0}, {5, 8}}).has_value());
  EXPECT_FALSE(intersect(a, Box{{0}, {4}}).has_value());
  EXPECT_EQ(a.toString(), "[0:4, 0:8)");
}

}  // namespace
}  // namespace tide::workloads
