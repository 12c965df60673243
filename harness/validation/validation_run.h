#pragma once
// One real run against the simulator on the same plan: the comparison that
// `tide validate` prints and `tide validate --matrix` makes for every row.
// A run that did not follow the plan's schedule is refused (kDataLoss);
// one that recorded no units is compared by its step totals only.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/plan/schedule.h"
#include "engine/plan/transfer_plan.h"
#include "harness/sim/plan_prediction.h"
#include "sim/unit_validation.h"
#include "sim/validation.h"

namespace tide::traces {
class ChromeTrace;
}

namespace tide::harness {

struct ValidationRun {
  PlanPrediction prediction;
  sim::Validation steps;  // per step: real, simulated, error
  plan::Schedule schedule;
  std::vector<sim::UnitTime> realUnits;
  std::optional<sim::UnitErrors> units;  // empty: not compared, unitsWhy says why
  std::string unitsWhy;
  // The median real step and its error (sim / real - 1).
  double realMedianSeconds = 0;
  double medianError = 0;

  // The real and the simulated units side by side (pid 1 and 2).
  traces::ChromeTrace timeline(const plan::TransferPlan& p) const;
  // tide.validate/1 with the units and what the prediction was made on.
  nlohmann::json toJson() const;
};

// `real`: a tide.sync/1 document; `host`: this host's figures
// (hostFiguresFor); `threshold`: the allowed mean |error| (a fraction) that
// sets `steps.pass`.
[[nodiscard]] Result<ValidationRun> validateRun(const nlohmann::json& real,
                                                const plan::TransferPlan& p,
                                                const std::string& clusterName,
                                                const HostFigures& host, double threshold);

}  // namespace tide::harness
