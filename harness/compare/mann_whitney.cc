#include "harness/compare/mann_whitney.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tide::harness {
namespace {

// Number of ways to reach each U value when choosing n1 of n1+n2 ranks
// (no ties); the classic recurrence f(n1, n2, u) = f(n1-1, n2, u-n2) + f(n1, n2-1, u).
std::vector<double> exactUDistribution(int n1, int n2) {
  // dp[i][j] is a vector over u; computed with a rolling table.
  int maxU = n1 * n2;
  std::vector<std::vector<std::vector<double>>> dp(n1 + 1,
                                                   std::vector<std::vector<double>>(n2 + 1));
  for (int i = 0; i <= n1; ++i) {
    for (int j = 0; j <= n2; ++j) {
      dp[i][j].assign(i * j + 1, 0.0);
      if (i == 0 || j == 0) {
        dp[i][j][0] = 1.0;
        continue;
      }
      for (int u = 0; u <= i * j; ++u) {
        double v = 0;
        if (u - j >= 0 && u - j <= (i - 1) * j) v += dp[i - 1][j][u - j];
        if (u <= i * (j - 1)) v += dp[i][j - 1][u];
        dp[i][j][u] = v;
      }
    }
  }
  std::vector<double> out = dp[n1][n2];
  out.resize(maxU + 1);
  return out;
}

}  // namespace

MannWhitneyResult mannWhitneyU(const std::vector<double>& a, const std::vector<double>& b) {
  MannWhitneyResult r;
  const size_t n1 = a.size(), n2 = b.size();
  if (n1 == 0 || n2 == 0) return r;

  // Midranks over the pooled sample.
  std::vector<std::pair<double, int>> pooled;
  pooled.reserve(n1 + n2);
  for (double v : a) pooled.emplace_back(v, 0);
  for (double v : b) pooled.emplace_back(v, 1);
  std::sort(pooled.begin(), pooled.end(),
            [](const auto& x, const auto& y) { return x.first < y.first; });
  double rankSumA = 0, tieTerm = 0;
  bool ties = false;
  for (size_t i = 0; i < pooled.size();) {
    size_t j = i;
    while (j < pooled.size() && pooled[j].first == pooled[i].first) ++j;
    double midrank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2.0;
    double t = static_cast<double>(j - i);
    if (t > 1) ties = true;
    tieTerm += t * t * t - t;
    for (size_t k = i; k < j; ++k)
      if (pooled[k].second == 0) rankSumA += midrank;
    i = j;
  }
  const double dn1 = static_cast<double>(n1), dn2 = static_cast<double>(n2);
  r.u = rankSumA - dn1 * (dn1 + 1) / 2.0;
  const double mean = dn1 * dn2 / 2.0;

  if (!ties && n1 <= 20 && n2 <= 20) {
    std::vector<double> dist = exactUDistribution(static_cast<int>(n1), static_cast<int>(n2));
    double total = std::accumulate(dist.begin(), dist.end(), 0.0);
    double lo = std::min(r.u, dn1 * dn2 - r.u);
    double tail = 0;
    for (int u = 0; u <= static_cast<int>(std::floor(lo + 1e-9)); ++u) tail += dist[u];
    r.pValue = std::min(1.0, 2.0 * tail / total);
    r.exact = true;
    return r;
  }
  const double n = dn1 + dn2;
  const double var = dn1 * dn2 / 12.0 * ((n + 1) - tieTerm / (n * (n - 1)));
  if (var <= 0) {
    r.pValue = 1.0;  // every value tied: no evidence of a difference
    return r;
  }
  double diff = std::fabs(r.u - mean) - 0.5;  // continuity correction
  if (diff < 0) diff = 0;
  r.z = diff / std::sqrt(var) * (r.u >= mean ? 1 : -1);
  r.pValue = std::min(1.0, std::erfc(std::fabs(r.z) / std::sqrt(2.0)));
  return r;
}

}  // namespace tide::harness
