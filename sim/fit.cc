#include "sim/fit.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tide::sim {

double FitParam::toCoord(double seconds) const {
  return logScale() ? std::log(seconds) : seconds;
}
double FitParam::fromCoord(double coord) const {
  return logScale() ? std::exp(coord) : coord;
}

ResponseGrid::ResponseGrid(std::vector<FitParam> params, int pointsPerDim, size_t rows)
    : params_(std::move(params)), n_(std::max(2, pointsPerDim)), rows_(rows), total_(1) {
  for (size_t d = 0; d < params_.size(); ++d) total_ *= static_cast<size_t>(n_);
  values_.assign(rows_ * total_, 0.0);
}

std::vector<double> ResponseGrid::point(size_t i) const {
  std::vector<double> x(params_.size());
  for (size_t d = 0; d < params_.size(); ++d) {
    const FitParam& p = params_[d];
    size_t k = i % n_;
    i /= n_;
    double lo = p.toCoord(p.low), hi = p.toCoord(p.high);
    x[d] = p.fromCoord(lo + (hi - lo) * static_cast<double>(k) / (n_ - 1));
  }
  return x;
}

double ResponseGrid::predict(size_t row, const std::vector<double>& x) const {
  // Cell and fraction per dimension, then the weighted sum over its corners.
  const size_t dims = params_.size();
  std::vector<size_t> cell(dims);
  std::vector<double> frac(dims);
  for (size_t d = 0; d < dims; ++d) {
    const FitParam& p = params_[d];
    double lo = p.toCoord(p.low), hi = p.toCoord(p.high);
    double v = std::clamp(p.toCoord(std::clamp(x[d], p.low, p.high)), lo, hi);
    double t = hi > lo ? (v - lo) / (hi - lo) * (n_ - 1) : 0;
    size_t c = std::min(static_cast<size_t>(t), static_cast<size_t>(n_ - 2));
    cell[d] = c;
    // The fraction is taken in the constant's own units, not in the grid's
    // log coordinate: a prediction is a sum of counts times constants, so
    // it is affine in each constant along a fixed critical path, and a
    // straight line between two grid points is exact there. Between log-
    // spaced points far apart (1, 7 and 50 ms at three points) a straight
    // line in log space overestimates the middle, and fits were pulled low.
    double a = p.fromCoord(lo + (hi - lo) * static_cast<double>(c) / (n_ - 1));
    double b = p.fromCoord(lo + (hi - lo) * static_cast<double>(c + 1) / (n_ - 1));
    double xs = std::clamp(x[d], p.low, p.high);
    frac[d] = b > a ? std::clamp((xs - a) / (b - a), 0.0, 1.0) : 0;
  }
  double sum = 0;
  for (size_t corner = 0; corner < (size_t{1} << dims); ++corner) {
    double w = 1;
    size_t index = 0, stride = 1;
    for (size_t d = 0; d < dims; ++d) {
      bool up = (corner >> d) & 1;
      w *= up ? frac[d] : 1 - frac[d];
      index += (cell[d] + (up ? 1 : 0)) * stride;
      stride *= n_;
    }
    if (w > 0) sum += w * at(row, index);
  }
  return sum;
}

double meanAbsLogError(const ResponseGrid& g, const std::vector<double>& published,
                       const std::vector<bool>& use, const std::vector<double>& x) {
  double sum = 0;
  int n = 0;
  for (size_t r = 0; r < g.rows(); ++r) {
    if (!use[r]) continue;
    double p = g.predict(r, x);
    if (!(p > 0) || !(published[r] > 0)) return std::numeric_limits<double>::infinity();
    sum += std::fabs(std::log(p / published[r]));
    ++n;
  }
  return n ? sum / n : 0;
}

Result<FitResult> fitConstants(const ResponseGrid& g, const std::vector<double>& published,
                               const std::vector<bool>& use) {
  const auto& ps = g.params();
  if (ps.empty() || ps.size() > 3)
    return TIDE_ERROR(Code::kInvalidArgument, "a fit takes 1 to 3 free constants");
  if (published.size() != g.rows() || use.size() != g.rows())
    return TIDE_ERROR(Code::kInvalidArgument, "one published figure and flag per row");
  if (std::none_of(use.begin(), use.end(), [](bool b) { return b; }))
    return TIDE_ERROR(Code::kInvalidArgument, "no row to fit on");
  const size_t dims = ps.size();
  auto objective = [&](const std::vector<double>& coord) {
    std::vector<double> x(dims);
    for (size_t d = 0; d < dims; ++d) x[d] = ps[d].fromCoord(coord[d]);
    return meanAbsLogError(g, published, use, x);
  };
  std::vector<double> lo(dims), hi(dims);
  for (size_t d = 0; d < dims; ++d) {
    lo[d] = ps[d].toCoord(ps[d].low);
    hi[d] = ps[d].toCoord(ps[d].high);
  }
  // Dense search first: the objective is a sum of |log| terms, piecewise
  // smooth with kinks, where a local method alone can stop on a kink.
  const int k = dims == 1 ? 401 : dims == 2 ? 81 : 31;
  size_t total = 1;
  for (size_t d = 0; d < dims; ++d) total *= static_cast<size_t>(k);
  std::vector<double> best(dims), c(dims);
  double bestF = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < total; ++i) {
    size_t j = i;
    for (size_t d = 0; d < dims; ++d) {
      c[d] = lo[d] + (hi[d] - lo[d]) * static_cast<double>(j % k) / (k - 1);
      j /= k;
    }
    double f = objective(c);
    if (f < bestF) bestF = f, best = c;
  }
  // Golden-section refinement, one constant at a time, within one lattice
  // step of the best point.
  constexpr double kPhi = 0.6180339887498949;
  for (int sweep = 0; sweep < 4; ++sweep) {
    for (size_t d = 0; d < dims; ++d) {
      double step = (hi[d] - lo[d]) / (k - 1);
      double a = std::max(lo[d], best[d] - step), b = std::min(hi[d], best[d] + step);
      std::vector<double> t = best;
      for (int it = 0; it < 40 && b - a > 1e-12 * (1 + std::fabs(a)); ++it) {
        double x1 = b - kPhi * (b - a), x2 = a + kPhi * (b - a);
        t[d] = x1;
        double f1 = objective(t);
        t[d] = x2;
        double f2 = objective(t);
        if (f1 <= f2)
          b = x2;
        else
          a = x1;
      }
      t[d] = 0.5 * (a + b);
      double f = objective(t);
      if (f < bestF) bestF = f, best = t;
    }
  }
  FitResult r;
  r.meanAbsLogError = bestF;
  for (size_t d = 0; d < dims; ++d) r.constants.push_back(ps[d].fromCoord(best[d]));
  return r;
}

}  // namespace tide::sim
