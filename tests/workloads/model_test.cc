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
  // FP8 inference is about half the BF16 size (ANCHORS: ~1.03 TB vs ~2.05 TB).
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

// Found by fuzz_toml: toml++ 3.3 has undefined behaviour on some non-ASCII
// characters, so they are refused with the line and code point.
TEST(ModelToml, RejectsCharactersTheParserMishandles) {
  auto r = parseModelToml("layers=2\ntp=\xc8\x9f\n", "t");
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("t:2: character U+021F"), std::string::npos)
      << r.status().message();
  auto r3 = parseModelToml("\xef\xb9\xbf#\n", "t");  // U+FE7F, a 3-byte sequence
  ASSERT_FALSE(r3.isOk());
  EXPECT_NE(r3.status().message().find("U+FE7F"), std::string::npos) << r3.status().message();
  auto r0 = parseModelToml(std::string("x=1\0\0r", 6), "t");
  ASSERT_FALSE(r0.isOk());
  EXPECT_NE(r0.status().message().find("control character 0"), std::string::npos)
      << r0.status().message();
  auto rh = parseModelToml("[[# comment\nlayers=2\n", "t");  // another toml++ assertion
  ASSERT_FALSE(rh.isOk());
  EXPECT_NE(rh.status().message().find("t:1: a table header"), std::string::npos)
      << rh.status().message();
  EXPECT_FALSE(parseModelToml("\xef\xbb\xbf[+\n", "t").isOk());  // after a byte-order mark
  EXPECT_FALSE(parseModelToml("x=1\n  [ #\n", "t").isOk());      // after blanks
  // Other UTF-8 (here in a comment) is not refused by that check.
  auto ok = parseModelToml("# \xe2\x89\x88 approx\nlayers=2\n", "t");
  EXPECT_EQ(ok.status().message().find("U+"), std::string::npos) << ok.status().message();
}

}  // namespace
}  // namespace tide::workloads
