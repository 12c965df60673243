#include "harness/compare/mann_whitney.h"

#include <gtest/gtest.h>

#include <random>

namespace tide::harness {
namespace {

TEST(MannWhitney, ExactSmallSampleMatchesTable) {
  // Completely separated samples of 5 and 5: U = 0, exact two-sided p = 2/252.
  auto r = mannWhitneyU({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10});
  EXPECT_TRUE(r.exact);
  EXPECT_DOUBLE_EQ(r.u, 0);
  EXPECT_NEAR(r.pValue, 2.0 / 252.0, 1e-12);
}

TEST(MannWhitney, IdenticalDistributionsAreNotSignificant) {
  auto r = mannWhitneyU({1, 3, 5, 7, 9, 11, 13, 15, 17}, {2, 4, 6, 8, 10, 12, 14, 16, 18});
  EXPECT_GT(r.pValue, 0.5);
}

TEST(MannWhitney, TiesUseNormalApproximation) {
  auto r = mannWhitneyU({1, 1, 2, 2, 3, 3, 4, 4, 5}, {1, 2, 2, 3, 3, 4, 4, 5, 5});
  EXPECT_FALSE(r.exact);
  EXPECT_GT(r.pValue, 0.3);
  auto all = mannWhitneyU({2, 2, 2}, {2, 2, 2});
  EXPECT_DOUBLE_EQ(all.pValue, 1.0);
}

TEST(MannWhitney, DetectsTwentyPercentShiftOverNoise) {
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(0, 0.02);
  std::vector<double> a, b;
  for (int i = 0; i < 9; ++i) {
    a.push_back(100 * (1 + noise(rng)));
    b.push_back(120 * (1 + noise(rng)));
  }
  EXPECT_LT(mannWhitneyU(a, b).pValue, 0.001);
}

TEST(MannWhitney, LargeSampleApproximationAgreesWithSymmetry) {
  std::vector<double> a, b;
  for (int i = 0; i < 30; ++i) {
    a.push_back(i);
    b.push_back(i + 0.5);
  }
  auto ab = mannWhitneyU(a, b), ba = mannWhitneyU(b, a);
  EXPECT_FALSE(ab.exact);
  EXPECT_NEAR(ab.pValue, ba.pValue, 1e-12);
  EXPECT_DOUBLE_EQ(ab.u + ba.u, 900.0);
}

}  // namespace
}  // namespace tide::harness
