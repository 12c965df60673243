#include "workloads/weights.h"

#include <gtest/gtest.h>

#include <cmath>

#include "workloads/layout.h"
#include "workloads/rng.h"
#include "workloads/routing.h"

namespace tide::workloads {
namespace {

struct Fixture {
  ModelSpec spec = orThrow(loadModel("tiny-moe"));
  ModelInventory inv = buildInventory(spec);
  RlConfig cfg;
  RoutingConfig rc;
  int steps = 8;
  RoutingTrace routing() const { return generateRouting(spec, rc, steps); }
};

TEST(Weights, BoxIsSubsetOfFullTensorAtEveryVersion) {
  Fixture f;
  SyntheticWeights w(f.inv, f.routing(), f.cfg, f.steps);
  const uint32_t t =
      static_cast<uint32_t>(f.inv.find("model.layers.2.mlp.experts.3.up_proj.weight"));
  const TensorSpec& ts = f.inv.tensors[t];
  for (int v : {0, 1, 5}) {
    std::vector<uint16_t> full(ts.numel());
    ASSERT_TRUE(w.fillBox(t, Box::full(ts.shape), v, full).isOk());
    Box b{{3, 10}, {9, 40}};
    std::vector<uint16_t> part(b.volume());
    ASSERT_TRUE(w.fillBox(t, b, v, part).isOk());
    size_t k = 0;
    for (uint64_t r = 3; r < 9; ++r) {
      for (uint64_t c = 10; c < 40; ++c) ASSERT_EQ(part[k++], full[r * ts.shape[1] + c]);
    }
  }
}

TEST(Weights, DeterministicAcrossInstancesAndSeedsDiffer) {
  Fixture f;
  SyntheticWeights a(f.inv, f.routing(), f.cfg, f.steps), b(f.inv, f.routing(), f.cfg, f.steps);
  RlConfig other = f.cfg;
  other.seed = 2;
  SyntheticWeights c(f.inv, f.routing(), other, f.steps);
  Box box = Box::full(f.inv.tensors[0].shape);
  EXPECT_EQ(orThrow(a.boxChecksum(0, box, 3)), orThrow(b.boxChecksum(0, box, 3)));
  EXPECT_NE(orThrow(a.boxChecksum(0, box, 3)), orThrow(c.boxChecksum(0, box, 3)));
  EXPECT_NE(orThrow(a.boxChecksum(0, box, 3)), orThrow(a.boxChecksum(0, box, 4)));
}

TEST(Weights, VersionedBoxMatchesReplay) {
  Fixture f;
  SyntheticWeights w(f.inv, f.routing(), f.cfg, f.steps);
  const uint32_t t = static_cast<uint32_t>(f.inv.find("model.layers.1.self_attn.kv_b_proj.weight"));
  Box b = tpSlice(f.inv.tensors[t], 1, 4);
  VersionedBox vb(w, t, b);
  std::vector<uint16_t> got(b.volume()), want(b.volume());
  vb.current(got);
  ASSERT_TRUE(w.fillBox(t, b, 0, want).isOk());
  EXPECT_EQ(got, want);
  for (int v = 1; v <= f.steps; ++v) {
    ASSERT_TRUE(vb.advance(got).isOk());
    ASSERT_TRUE(w.fillBox(t, b, v, want).isOk());
    ASSERT_EQ(got, want) << "version " << v;
  }
  EXPECT_FALSE(vb.advance(got).isOk());  // beyond the last version
}

TEST(Weights, RejectsBadBoxesAndVersions) {
  Fixture f;
  SyntheticWeights w(f.inv, f.routing(), f.cfg, f.steps);
  std::vector<uint16_t> buf(4);
  EXPECT_EQ(w.fillBox(0, Box{{0, 0}, {2, 2}}, f.steps + 1, buf).code(), Code::kOutOfRange);
  EXPECT_EQ(w.fillBox(0, Box{{0, 0}, {1u << 30, 2}}, 0, buf).code(), Code::kOutOfRange);
  EXPECT_EQ(w.fillBox(0, Box{{0, 0}, {1, 2}}, 0, buf).code(), Code::kInvalidArgument);
  EXPECT_EQ(w.fillBox(99999, Box{{0, 0}, {2, 2}}, 0, buf).code(), Code::kOutOfRange);
}

TEST(RlUpdate, ChangedFractionIsSmallAndMeasured) {
  Fixture f;
  SyntheticWeights w(f.inv, f.routing(), f.cfg, f.steps);
  ChangeStats cs = orThrow(measureChanges(w, f.steps, 0, 2));
  ASSERT_TRUE(cs.exact);
  uint64_t changed = 0, total = 0;
  for (uint32_t t = 0; t < f.inv.tensors.size(); ++t) {
    for (int s = 1; s <= f.steps; ++s) {
      changed += cs.changedSampled[(s - 1) * f.inv.tensors.size() + t];
      total += f.inv.tensors[t].numel();
    }
  }
  double frac = static_cast<double>(changed) / total;
  // BF16 rounding of lr=1e-6 AdamW updates: most elements do not change per step.
  EXPECT_GT(frac, 1e-4);
  EXPECT_LT(frac, 0.1);
  // Cross-check one tensor's exact count against two full versions.
  const uint32_t t = 1;
  std::vector<uint16_t> a(f.inv.tensors[t].numel()), b(a.size());
  ASSERT_TRUE(w.fillBox(t, Box::full(f.inv.tensors[t].shape), 2, a).isOk());
  ASSERT_TRUE(w.fillBox(t, Box::full(f.inv.tensors[t].shape), 3, b).isOk());
  uint64_t diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff += a[i] != b[i];
  EXPECT_EQ(diff, cs.changedSampled[2 * f.inv.tensors.size() + t]);
  // A sampled run agrees with the exact one within its confidence interval.
  ChangeStats sampled = orThrow(measureChanges(w, f.steps, 64, 1));
  EXPECT_FALSE(sampled.exact);
  EXPECT_EQ(sampled.checked[t], 64u);
}

TEST(RlUpdate, ExpertWithoutTokensDoesNotChange) {
  Fixture f;
  RoutingTrace r = f.routing();
  for (int s = 0; s < r.steps; ++s)
    r.counts[(static_cast<size_t>(s) * r.moeLayers + 0) * r.experts + 5] = 0;
  SyntheticWeights w(f.inv, r, f.cfg, f.steps);
  const uint32_t t =
      static_cast<uint32_t>(f.inv.find("model.layers.1.mlp.experts.5.gate_proj.weight"));
  Box b = Box::full(f.inv.tensors[t].shape);
  EXPECT_EQ(orThrow(w.boxChecksum(t, b, 0)), orThrow(w.boxChecksum(t, b, f.steps)));
  const uint32_t u =
      static_cast<uint32_t>(f.inv.find("model.layers.1.mlp.experts.6.gate_proj.weight"));
  EXPECT_NE(orThrow(w.boxChecksum(u, b, 0)), orThrow(w.boxChecksum(u, b, f.steps)));
}

TEST(Routing, SkewedAndDeterministic) {
  Fixture f;
  f.rc.zipf = 1.2;
  RoutingTrace a = generateRouting(f.spec, f.rc, 3), b = generateRouting(f.spec, f.rc, 3);
  ASSERT_TRUE(a.validate().isOk());
  EXPECT_EQ(a.counts, b.counts);
  EXPECT_EQ(a.moeLayers, f.spec.layers - f.spec.firstDenseLayers);
  uint32_t mx = 0, mn = UINT32_MAX;
  double sum = 0;
  for (int e = 0; e < a.experts; ++e) {
    mx = std::max(mx, a.tokens(0, 0, e));
    mn = std::min(mn, a.tokens(0, 0, e));
    sum += a.tokens(0, 0, e);
  }
  EXPECT_GT(mx, 4 * mn + 1);
  EXPECT_NEAR(sum, f.rc.tokensPerStep * f.spec.topK, 0.05 * f.rc.tokensPerStep * f.spec.topK);
}

// The generator's loops may run vectorized (AVX-512 where the CPU has it);
// every rank must still produce the same bits, so both must equal a plain
// scalar evaluation of the documented formulas.
TEST(Weights, VectorizedLoopsMatchScalarFormulas) {
  Fixture f;
  SyntheticWeights w(f.inv, RoutingTrace{}, f.cfg, 3);
  const uint32_t t = 1;
  const uint64_t begin = 3, n = 5000;  // unaligned start and end
  std::vector<uint16_t> got(n);
  w.fillInitial(t, begin, n, got.data());
  const uint64_t key0 = streamKey(f.cfg.seed, t, 0, kStreamInit);
  const float* table = normalTable();
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t e = begin + i;
    const float x = w.initMean(t) +
                    w.initStd(t) * table[(counterHash(key0, e >> 2) >> (16 * (e & 3))) & 0xffff];
    ASSERT_EQ(got[i], toBf16(x)) << "element " << e;
  }
  // Three AdamW steps, scalar, from the same initial masters.
  std::vector<uint64_t> flat(n);
  for (uint64_t i = 0; i < n; ++i) flat[i] = begin + i;
  std::vector<float> master(n), m(n, 0.0f), v(n, 0.0f), dir(n);
  w.initialMaster(t, flat.data(), n, master.data());
  w.directions(t, flat.data(), n, dir.data());
  const auto& sched = w.schedule(t);
  const RlConfig& c = f.cfg;
  for (int s = 1; s <= 3; ++s) {
    const auto& st = sched.steps[s - 1];
    const uint64_t key = streamKey(c.seed, t, static_cast<uint64_t>(s), kStreamGrad);
    const float sig = static_cast<float>(c.signal), b1 = static_cast<float>(c.beta1),
                b2 = static_cast<float>(c.beta2);
    const float noise = std::sqrt(1.0f - sig * sig);
    for (uint64_t i = 0; i < n; ++i) {
      volatile float g = static_cast<float>(c.gradStd) * st.gradScale *
                         (sig * dir[i] + noise * normalFromBits(counterHash(key, flat[i])));
      volatile float mm = b1 * m[i] + (1.0f - b1) * g;
      volatile float vv = b2 * v[i] + (1.0f - b2) * g * g;
      m[i] = mm;
      v[i] = vv;
      volatile float up =
          st.lrOverBc1 * m[i] / (std::sqrt(v[i] * st.invBc2) + static_cast<float>(c.eps));
      master[i] = master[i] - up - static_cast<float>(c.lr * c.weightDecay) * master[i];
    }
  }
  w.fillFlat(t, begin, n, 3, got.data());
  for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], toBf16(master[i])) << "element " << i;
}

}  // namespace
}  // namespace tide::workloads
