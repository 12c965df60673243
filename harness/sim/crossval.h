#pragma once
// Fits of free cost-profile constants on published rows (tide sim calibrate)
// and their leave-one-out cross-validation (tide sim crossval): each
// scenario is left out in turn, the constants are fitted on the others'
// rows and the left-out scenario's rows are predicted by a full simulation
// at those constants. The error that counts is the held-out one.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/sim/calibration_set.h"
#include "sim/fit.h"

namespace tide::harness {

struct PredictedRow {
  std::string scenario, strategy;
  double publishedSeconds = 0, predictedSeconds = 0;
  double error() const { return predictedSeconds / publishedSeconds - 1; }
  std::vector<double> constants;  // the fit that predicted it (seconds, per free constant)
};

// The short name a strategy's errors are summed under: "broadcast" or
// "p2p" when its name says so, else its name.
std::string strategyKind(const std::string& strategy);

struct CalibrateResult {
  sim::FitResult fit;
  std::vector<PredictedRow> rows;  // the fitted rows, simulated at the fit
};

// Fits the free constants on the rows named in `fit` (a scenario name takes
// its every row; "scenario/strategy" one row).
[[nodiscard]] Result<CalibrateResult> calibrate(const CalibrationSet& set,
                                                const sim::ResponseGrid& grid,
                                                const std::vector<std::string>& fit);
// The profile with the fitted constants set and labelled fitted-on.
sim::CostProfile fittedProfile(const CalibrationSet& set, const std::vector<sim::FitParam>& params,
                               const CalibrateResult& r, const std::string& command);

struct CrossvalResult {
  std::vector<sim::FitParam> params;
  int gridPoints = 0;
  std::string profile;
  std::vector<PredictedRow> heldOut;   // each row predicted by the fit without its scenario
  std::vector<PredictedRow> inSample;  // every row at the fit on all rows
  int winnerRight = 0, rowsTotal = 0;  // held out; scenarios with two strategies
  nlohmann::json toJson() const;
  std::string table() const;
};

[[nodiscard]] Result<CrossvalResult> crossvalidate(const CalibrationSet& set,
                                                   const sim::ResponseGrid& grid);

}  // namespace tide::harness
