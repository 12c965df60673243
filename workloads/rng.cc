#include "workloads/rng.h"

#include <cmath>
#include <vector>

namespace tide::workloads {

namespace {

// A plain function, not a lambda: a lambda is implicitly constexpr, and GCC
// then tries to evaluate the table at compile time (3.9 M erfc folds, ~13 s
// of every build) before giving up and running it at start-up anyway.
std::vector<float> buildNormalTable() {
  std::vector<float> t(65536);
  for (int k = 0; k < 65536; ++k) {
    const double u = (k + 0.5) / 65536.0;
    double lo = -8, hi = 8;
    for (int it = 0; it < 60; ++it) {  // bisection on Phi(x) = erfc(-x / sqrt 2) / 2
      const double mid = 0.5 * (lo + hi);
      if (0.5 * std::erfc(-mid / std::sqrt(2.0)) < u) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    t[k] = static_cast<float>(0.5 * (lo + hi));
  }
  return t;
}

}  // namespace

const float* normalTable() {
  static const std::vector<float> table = buildNormalTable();
  return table.data();
}

}  // namespace tide::workloads
