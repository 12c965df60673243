#pragma once
// Human-readable and JSON output of simulation results.

#include <nlohmann/json.hpp>
#include <string>

#include "engine/core/status.h"
#include "sim/scenario.h"
#include "sim/simulator.h"

namespace tide::sim {

// Prints the update time, the per-stage breakdown, the lower bound and, when
// the scenario has one, the published figure and the error against it.
void printStrategyResult(const StrategyResult& r, const Scenario& sc);
// The inputs as resolved (defaults and preset figures filled in), so a run
// says what it simulated: printed once, and as a JSON object.
void printScenarioInputs(const Scenario& sc);
nlohmann::json scenarioInputsJson(const Scenario& sc);
[[nodiscard]] Status writeJsonFile(const std::string& path, const nlohmann::json& j);

}  // namespace tide::sim
