// Exact changed indices and the changed-fraction summary of generated traces.
#include "traces/change_summary.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>

#include "traces/generator.h"
#include "traces/trace_file.h"
#include "workloads/model.h"
#include "workloads/weights.h"

namespace tide::traces {
namespace {

GenerateOptions tinyMoe(int steps) {
  GenerateOptions o;
  o.model = "tiny-moe";
  o.steps = steps;
  o.threads = 2;
  o.rollout.samplesPerStep = 4;
  // Few tokens: some experts get none in some steps.
  o.routing.tokensPerStep = 8;
  return o;
}

// The recorded indices are exactly the elements whose bf16 value differs
// between the weights of consecutive versions, as any rank would produce them.
TEST(ChangeIndices, MatchTheSyntheticWeights) {
  const int steps = 3;
  GenerateOptions o = tinyMoe(steps);
  TraceData d = orThrow(generateTrace(o));
  ASSERT_TRUE(d.delta.exact);
  const size_t nt = d.tensors.size();
  ASSERT_EQ(d.delta.indexOffsets.size(), steps * nt + 1);
  auto spec = orThrow(workloads::loadModel("tiny-moe"));
  workloads::ModelInventory inv = workloads::buildInventory(spec);
  workloads::SyntheticWeights w(inv, d.routing, d.meta.rl, steps);
  uint64_t total = 0;
  for (uint32_t t = 0; t < nt; t += 7) {  // every 7th tensor: all kinds are hit
    const uint64_t n = d.tensors.numel[t];
    std::vector<uint16_t> prev(n), cur(n);
    w.fillFlat(t, 0, n, 0, prev.data());
    for (int s = 1; s <= steps; ++s) {
      w.fillFlat(t, 0, n, s, cur.data());
      std::vector<uint32_t> want;
      for (uint64_t i = 0; i < n; ++i) {
        if (cur[i] != prev[i]) want.push_back(static_cast<uint32_t>(i));
      }
      const size_t cell = static_cast<size_t>(s - 1) * nt + t;
      std::vector<uint32_t> got(d.delta.changedIndices.begin() + d.delta.indexOffsets[cell],
                                d.delta.changedIndices.begin() + d.delta.indexOffsets[cell + 1]);
      EXPECT_EQ(got, want) << d.tensors.names[t] << " step " << s;
      total += want.size();
      prev.swap(cur);
    }
  }
  EXPECT_GT(total, 0u);
}

TEST(ChangeIndices, RoundTripAndOptOut) {
  GenerateOptions o = tinyMoe(2);
  TraceData d = orThrow(generateTrace(o));
  const std::string path = ::testing::TempDir() + "tide_idx_" + std::to_string(::getpid()) + ".h5";
  ASSERT_TRUE(writeTrace(path, d).isOk());
  TraceData r = orThrow(readTrace(path));
  EXPECT_EQ(r.delta.indexOffsets, d.delta.indexOffsets);
  EXPECT_EQ(r.delta.changedIndices, d.delta.changedIndices);
  o.recordIndices = false;
  TraceData n = orThrow(generateTrace(o));
  EXPECT_TRUE(n.delta.indexOffsets.empty());
  EXPECT_EQ(n.delta.changedSampled, d.delta.changedSampled);
  o.samplePerTensor = 64;  // sampled runs never record indices
  o.autoExact = false;
  EXPECT_TRUE(orThrow(generateTrace(o)).delta.indexOffsets.empty());
  std::remove(path.c_str());
}

TEST(ChangeSummary, KindsCoverTheModelAndIdleExpertsDoNotChange) {
  TraceData d = orThrow(generateTrace(tinyMoe(4)));
  ChangeSummary s = summarizeChanges(d);
  uint64_t params = 0, tensors = 0;
  for (const auto& k : s.kinds) {
    params += k.params;
    tensors += k.tensors;
    EXPECT_GE(k.changedPerStep, k.minStep);
    EXPECT_LE(k.changedPerStep, k.maxStep);
    EXPECT_EQ(k.halfWidth95, 0.0);  // exact
  }
  EXPECT_EQ(params, d.meta.totalParams);
  EXPECT_EQ(tensors, d.tensors.size());
  EXPECT_GT(s.total.changedPerStep, 0.0);
  EXPECT_LT(s.total.changedPerStep, 0.5);
  // With 8 tokens per step some experts are idle; the optimizer skips them.
  EXPECT_GT(s.experts.cells, 0u);
  EXPECT_GT(s.experts.idleCells, 0u);
  EXPECT_EQ(s.experts.idleChanged, 0.0);
  EXPECT_GT(s.experts.activeMean, 0.0);
  EXPECT_NE(formatChangeSummary(s).find("routed_expert"), std::string::npos);
}

TEST(ChangeSummary, SampledBoundsShrinkWithTheSample) {
  GenerateOptions o = tinyMoe(2);
  o.autoExact = false;
  o.samplePerTensor = 16;
  ChangeSummary small = summarizeChanges(orThrow(generateTrace(o)));
  o.samplePerTensor = 256;
  ChangeSummary large = summarizeChanges(orThrow(generateTrace(o)));
  ASSERT_GT(small.total.halfWidth95, 0.0);
  EXPECT_LT(large.total.halfWidth95, small.total.halfWidth95);
  EXPECT_GT(large.experts.cellHalfWidth95, 0.0);
}

}  // namespace
}  // namespace tide::traces
