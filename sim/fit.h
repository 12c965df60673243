#pragma once
// Fitting a few cost-profile constants to published update times (tide sim
// calibrate / crossval). A simulation of the large rows takes seconds, so
// the fit does not call the simulator: it samples every row's prediction on
// a grid over the free constants' ranges (ResponseGrid, filled by the
// caller), interpolates between the grid points and minimises the mean
// |log(predicted / published)| over the fitted rows with a dense search
// followed by golden-section refinement, one constant at a time.

#include <cstddef>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace tide::sim {

// One free constant: its profile key and the range it may move in (seconds).
struct FitParam {
  std::string key;
  double low = 0, high = 0;
  // Grid and search run in log space when the range excludes 0 (the
  // constants span decades), else in linear space.
  bool logScale() const { return low > 0; }
  double toCoord(double seconds) const;
  double fromCoord(double coord) const;
};

// Predictions of every row at every point of a regular grid (points per
// free constant in each dimension), and multilinear interpolation between.
class ResponseGrid {
 public:
  ResponseGrid(std::vector<FitParam> params, int pointsPerDim, size_t rows);
  const std::vector<FitParam>& params() const { return params_; }
  int pointsPerDim() const { return n_; }
  size_t points() const { return total_; }
  size_t rows() const { return rows_; }
  // The constants (seconds) at grid point i.
  std::vector<double> point(size_t i) const;
  void set(size_t row, size_t i, double seconds) { values_[row * total_ + i] = seconds; }
  double at(size_t row, size_t i) const { return values_[row * total_ + i]; }
  // The row's prediction at constants x (seconds), inside the ranges.
  double predict(size_t row, const std::vector<double>& x) const;

 private:
  std::vector<FitParam> params_;
  int n_;
  size_t rows_, total_;
  std::vector<double> values_;  // row-major: row, then grid point
};

struct FitResult {
  std::vector<double> constants;  // seconds, per FitParam
  double meanAbsLogError = 0;     // over the fitted rows, on the grid
};

// Mean |log(predicted / published)| over the rows with use[row].
double meanAbsLogError(const ResponseGrid& g, const std::vector<double>& published,
                       const std::vector<bool>& use, const std::vector<double>& x);
// Minimises meanAbsLogError over the free constants' ranges.
[[nodiscard]] Result<FitResult> fitConstants(const ResponseGrid& g,
                                             const std::vector<double>& published,
                                             const std::vector<bool>& use);

}  // namespace tide::sim
