#pragma once
// Two-sided Mann-Whitney U test (Wilcoxon rank-sum) for two independent
// samples, with tie correction and continuity correction in the normal
// approximation, exact enumeration for small samples without ties. Used by
// `tide compare` to tell a regression from noise.

#include <vector>

namespace tide::harness {

struct MannWhitneyResult {
  double u = 0;       // U statistic of the first sample
  double z = 0;       // normal-approximation z (0 when exact)
  double pValue = 1;  // two-sided
  bool exact = false;
};

MannWhitneyResult mannWhitneyU(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace tide::harness
