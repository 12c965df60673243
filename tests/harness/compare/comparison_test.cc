#include "harness/compare/comparison.h"

#include <gtest/gtest.h>

#include <random>

namespace tide::harness {
namespace {

ResultSet makeSet(double center, bool higherIsBetter, uint32_t seed, size_t n = 9) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0, 0.01);
  ResultSet s;
  Metric& m = s.metrics["tcp/gbps"];
  m.higherIsBetter = higherIsBetter;
  m.unit = "gbps";
  for (size_t i = 0; i < n; ++i) m.values.push_back(center * (1 + noise(rng)));
  return s;
}

TEST(Compare, FlagsInjectedTwentyPercentSlowdown) {
  auto rows = compareSets(makeSet(10, true, 1), makeSet(8, true, 2), {});
  ASSERT_TRUE(rows.isOk());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].verdict, Verdict::kRegressed);
  EXPECT_NEAR((*rows)[0].changePercent, -20, 2);
}

TEST(Compare, SameBuildTwiceIsNotFlagged) {
  auto rows = compareSets(makeSet(10, true, 3), makeSet(10, true, 4), {});
  ASSERT_TRUE(rows.isOk());
  EXPECT_NE((*rows)[0].verdict, Verdict::kRegressed);
}

TEST(Compare, ImprovementAndDirection) {
  auto faster = compareSets(makeSet(10, false, 5), makeSet(7, false, 6), {});
  EXPECT_EQ((*faster)[0].verdict, Verdict::kImproved);
  auto slower = compareSets(makeSet(10, false, 5), makeSet(13, false, 6), {});
  EXPECT_EQ((*slower)[0].verdict, Verdict::kRegressed);
}

TEST(Compare, PerMetricThresholdAndTooFewSamples) {
  CompareOptions opt;
  opt.perMetric = {{"^tcp/", 50.0}};
  auto rows = compareSets(makeSet(10, true, 1), makeSet(8, true, 2), opt);
  EXPECT_EQ((*rows)[0].verdict, Verdict::kNoiseOnly);
  auto few = compareSets(makeSet(10, true, 1, 3), makeSet(5, true, 2, 3), {});
  EXPECT_EQ((*few)[0].verdict, Verdict::kTooFewSamples);
  opt.perMetric = {{"(", 1.0}};
  EXPECT_FALSE(compareSets(makeSet(10, true, 1), makeSet(8, true, 2), opt).isOk());
}

TEST(Compare, MissingMetricsAreReportedBothWays) {
  ResultSet a = makeSet(10, true, 1), b;
  b.metrics["other"] = Metric{{1, 2, 3}, "s", false};
  auto rows = compareSets(a, b, {});
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].verdict, Verdict::kMissing);
  EXPECT_EQ((*rows)[1].verdict, Verdict::kMissing);
}

}  // namespace
}  // namespace tide::harness
