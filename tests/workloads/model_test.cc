#include "workloads/model.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tide::workloads {
namespace {

TEST(ModelZoo, ParameterCountsMatchPublishedTotals) {
  int checked = 0;
  for (const auto& name : zooModels()) {
    auto spec = loadModel(name);
    ASSERT_TRUE(spec.isOk()) << spec.status().toString();
    ModelInventory inv = buildInventory(*spec);
    if (spec->publishedParams == 0) continue;  // tiny test models
    double ratio = static_cast<double>(inv.totalParams()) / spec->publishedParams;
    EXPECT_NEAR(ratio, 1.0, 0.01) << name << ": " << inv.totalParams() << " vs published "
                                  << spec->publishedParams;
    ++checked;
  }
  EXPECT_GE(checked, 6);
}

TEST(ModelZoo, KimiK2Structure) {
  auto spec = orThrow(loadModel("kimi-k2"));
  ModelInventory inv = buildInventory(spec);
  EXPECT_EQ(inv.layers, 61);
  EXPECT_EQ(inv.experts, 384);
  // One expert = 3 x 7168 x 2048 parameters.
  auto e = inv.find("model.layers.5.mlp.experts.17.down_proj.weight");
  ASSERT_GE(e, 0);
  EXPECT_EQ(inv.tensors[e].shape, (std::vector<uint64_t>{7168, 2048}));
  EXPECT_EQ(inv.tensors[e].kind, TensorKind::kRoutedExpert);
  EXPECT_EQ(inv.tensors[e].expert, 17);
  EXPECT_EQ(inv.tensors[e].inferDtype, DType::kFP8E4M3);
  double expertShare =
      static_cast<double>(inv.paramsOfKind(TensorKind::kRoutedExpert)) / inv.totalParams();
  EXPECT_GT(expertShare, 0.95);
  // FP8 inference is about half the BF16 size (docs/sources.md: ~1.03 TB vs ~2.05 TB).
  EXPECT_NEAR(inv.bytes(false) / 1e12, 2.05, 0.05);
  EXPECT_NEAR(inv.bytes(true) / 1e12, 1.03, 0.05);
  EXPECT_EQ(inv.find("model.layers.0.mlp.gate.weight"), -1);  // layer 0 is dense
  EXPECT_GE(inv.find("model.layers.0.mlp.gate_proj.weight"), 0);
}

TEST(ModelZoo, ScaledKeepsStructure) {
  auto spec = orThrow(loadModel("kimi-k2"));
  auto small = orThrow(scaled(spec, 64));
  ModelInventory a = buildInventory(spec), b = buildInventory(small);
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  EXPECT_EQ(small.hidden, 112u);
  EXPECT_EQ(small.heads, spec.heads);
  EXPECT_EQ(small.experts, spec.experts);
  EXPECT_EQ(small.topK, spec.topK);
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    EXPECT_EQ(a.tensors[i].name, b.tensors[i].name);
    EXPECT_EQ(a.tensors[i].shape.size(), b.tensors[i].shape.size());
  }
  double r = static_cast<double>(a.totalParams()) / b.totalParams();
  EXPECT_GT(r, 64.0 * 64 * 0.9);
  EXPECT_FALSE(scaled(spec, 0).isOk());
}

TEST(ModelToml, RejectsImpossibleDims) {
  const char* base = "name='x'\nattention='gqa'\nhidden=64\nvocab=100\ndense_intermediate=32\n";
  auto ok = parseModelToml(std::string(base) + "layers=2\nheads=4\nkv_heads=2\nhead_dim=16\n", "t");
  ASSERT_TRUE(ok.isOk()) << ok.status().toString();
  for (const char* extra : {
           "layers=2\nheads=4\nkv_heads=3\nhead_dim=16\n",             // heads % kv_heads
           "layers=0\nheads=4\nkv_heads=2\nhead_dim=16\n",             // no layers
           "layers=2\nheads=-4\nkv_heads=2\nhead_dim=16\n",            // negative
           "layers=2\nheads=4\nkv_heads=2\nhead_dim=16\nexperts=4\n",  // experts, no top_k
           "layers=2\nheads=4\nkv_heads=2\nhead_dim=16\nbogus=1\n",    // unknown key
           "layers=2\nheads=4.5\nkv_heads=2\nhead_dim=16\n",           // not an integer
           "layers=2\nheads=4\nkv_heads=2\nhead_dim=99999999999\n",    // too large
           "layers=2\nheads=4\nkv_heads=2\nhead_dim=16\nfirst_dense_layers=3\n",
           "layers=2\nheads=4\nkv_heads=2\nhead_dim=16\nlayers=3\n",  // duplicate key
           "layers=2\nheads=4\nkv_heads=2\nhead_dim=16\nattention='x'\n",
       }) {
    auto r = parseModelToml(std::string(base) + extra, "t");
    EXPECT_FALSE(r.isOk()) << extra;
    if (!r.isOk()) {
      EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
      EXPECT_EQ(r.status().message().find('\n'), std::string::npos) << r.status().message();
    }
  }
  EXPECT_EQ(loadModel("no-such-model").status().code(), Code::kNotFound);
}

// Found by fuzz_toml: toml++ 3.3 asserts or has undefined behaviour on
// malformed input, so only tide's line-based subset reaches it.
TEST(ModelToml, AcceptsOnlyTheLineSubset) {
  auto expectRefused = [](const std::string& text, const std::string& what) {
    auto r = parseModelToml(text, "t");
    ASSERT_FALSE(r.isOk()) << text;
    EXPECT_NE(r.status().message().find(what), std::string::npos) << r.status().message();
  };
  expectRefused("layers=2\ntp=\xc8\x9f\n", "t:2: character 200");
  expectRefused("\xef\xb9\xbf#\n", "t:1: character");
  expectRefused(std::string("x=1\0\0r", 6), "t:1: character 0");
  expectRefused("[[# comment\nlayers=2\n", "t:1: a table header must be a bare key");
  expectRefused("c=[}\n", "t:1: array items");
  expectRefused("x=1\n  [ #\n", "t:2: a table header");
  expectRefused("x = \"a\\u0041\"\n", "t:1: a value must be");
  expectRefused("x = 1 2\n", "t:1: unexpected text");
  expectRefused("x = {a = 1}\n", "t:1: a value must be");
  expectRefused("x\n", "t:1: expected `=`");
  EXPECT_FALSE(parseModelToml("\xef\xbb\xbf[+\n", "t").isOk());  // after a byte-order mark
  // Everything the subset allows still reaches the model reader's checks.
  auto ok = parseModelToml(
      "\xef\xbb\xbf# comment\n"
      "x = [1, 2.5e3, -3, true, \"s\",]  # trailing comma\n[a.b]\n[[c]]\n",
      "t");
  EXPECT_EQ(ok.status().message().find("character"), std::string::npos) << ok.status().message();
}

}  // namespace
}  // namespace tide::workloads
