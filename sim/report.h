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
// The scenario's cost profile, constant by constant as applied (a
// scenario's override marked "scenario").
nlohmann::json profileJson(const Scenario& sc);
// Records in `r` the profile of `priced` and who chose it (StrategyResult).
void recordProfile(const Scenario& priced, ProfileChoice choice, std::string own,
                   StrategyResult& r);
[[nodiscard]] Status writeJsonFile(const std::string& path, const nlohmann::json& j);

}  // namespace tide::sim
