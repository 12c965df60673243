#pragma once
// The published rows `tide sim calibrate` and `tide sim crossval` fit and
// predict: every scenario given (files, or every *.toml of a folder) with a
// published whole-update figure for a strategy it runs, one row per such
// strategy. Each strategy's plan is made once; a prediction at other
// constants re-simulates the same plan under the given cost profile with the
// free constants set.

#include <functional>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/plan/transfer_plan.h"
#include "sim/cost_profile.h"
#include "sim/fit.h"
#include "sim/scenario.h"

namespace tide::harness {

struct CalibrationRow {
  std::string scenario, strategy;  // the row's name is "scenario/strategy"
  double publishedSeconds = 0;
  size_t scenarioIndex = 0;
  plan::TransferPlan plan;
  std::string name() const { return scenario + "/" + strategy; }
};

class CalibrationSet {
 public:
  // Scenario files and folders; every scenario is priced with `profile`
  // (its own [calibration] overrides, if any, are replaced).
  [[nodiscard]] static Result<CalibrationSet> load(const std::vector<std::string>& paths,
                                                   const sim::CostProfile& profile);
  const std::vector<CalibrationRow>& rows() const { return rows_; }
  const std::vector<sim::Scenario>& scenarios() const { return scenarios_; }
  const sim::CostProfile& profile() const { return profile_; }
  std::vector<double> published() const;

  // The free constants named by `keys`, each with the profile's range.
  [[nodiscard]] Result<std::vector<sim::FitParam>> freeParams(
      const std::vector<std::string>& keys) const;
  // The simulated update time of row r with the free constants at x.
  [[nodiscard]] Result<double> predict(size_t r, const std::vector<sim::FitParam>& params,
                                       const std::vector<double>& x) const;
  // Every row's prediction at every point of a grid over the free ranges;
  // `progress` is told of each point done.
  [[nodiscard]] Result<sim::ResponseGrid> sample(
      const std::vector<sim::FitParam>& params, int pointsPerDim,
      const std::function<void(size_t done, size_t total)>& progress = {}) const;

 private:
  sim::CostProfile profile_;
  std::vector<sim::Scenario> scenarios_;
  std::vector<CalibrationRow> rows_;
};

}  // namespace tide::harness
