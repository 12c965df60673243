#pragma once
// `tide validate`: a real run's result (tide.sync/1 JSON from the real
// executor) against the simulator's prediction for the same plan on the
// emulated cluster's spec. Per-step error = sim / real - 1.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace tide::sim {

struct ValidationStep {
  int step = 0;
  double realSeconds = 0;
  double simSeconds = 0;
  double error = 0;  // sim / real - 1
};

struct Validation {
  std::string strategy;
  std::vector<ValidationStep> steps;
  double meanAbsError = 0;
  double maxAbsError = 0;
  double threshold = 0.15;
  bool pass = false;
  nlohmann::json toJson() const;
};

// Rejects a result that is not tide.sync/1, not verified, has no steps, or
// whose bytes differ from `planBytes` (when > 0): that run moved another plan.
// OK when `real` is a tide.sync/1 document (the JSON of tide sync --json).
[[nodiscard]] Status checkSyncSchema(const nlohmann::json& real);

[[nodiscard]] Result<Validation> compareWithReal(const nlohmann::json& real, double simSeconds,
                                                 double planBytes, double threshold = 0.15);

}  // namespace tide::sim
