#include "sim/rl_pipeline.h"

#include <gtest/gtest.h>

namespace tide::sim {
namespace {

RlConfig base() {
  RlConfig c;
  c.steps = 10;
  c.rollout.samplesPerStep = 64;
  c.rollout.maxConcurrent = 64;
  c.trainTokensPerSecond = 1e5;
  c.syncSeconds = 5;
  return c;
}

TEST(RlPipeline, SyncIsTheSumOfItsParts) {
  RlConfig c = base();
  RlResult r = simulateRl(c);
  double expect = c.steps * (r.meanGenSeconds + r.meanTrainSeconds) + (c.steps - 1) * c.syncSeconds;
  EXPECT_NEAR(r.makespan, expect, 1e-6 * expect);
  ASSERT_EQ(r.stalenessHistogram.size(), 1u);
  EXPECT_EQ(r.stalenessHistogram[0], c.steps);
}

TEST(RlPipeline, AsyncOverlapsAndIsStale) {
  RlConfig c = base();
  RlResult s = simulateRl(c);
  c.async = true;
  c.staleness = 2;
  RlResult a = simulateRl(c);
  EXPECT_GT(a.samplesPerSecond, s.samplesPerSecond);
  EXPECT_LT(a.inferenceIdle, s.inferenceIdle);
  int stale = 0;
  for (size_t i = 1; i < a.stalenessHistogram.size(); ++i) stale += a.stalenessHistogram[i];
  EXPECT_GT(stale, 0);
}

TEST(RlPipeline, LongerSyncSlowsSyncRl) {
  RlConfig c = base();
  RlResult fast = simulateRl(c);
  c.syncSeconds = 50;
  RlResult slow = simulateRl(c);
  EXPECT_LT(slow.samplesPerSecond, fast.samplesPerSecond);
}

}  // namespace
}  // namespace tide::sim
