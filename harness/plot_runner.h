#pragma once
// Runs one of the matplotlib scripts in harness/plots/ on a JSON input.

#include <nlohmann/json.hpp>
#include <string>

#include "engine/core/status.h"

namespace tide::harness {

// Writes `input` to a temporary file and runs
// `python3 harness/plots/<script> <input.json> <outPng>`. A failure is one
// line: the script's last stderr line (a traceback's error), not all of it.
Status runPlot(const std::string& script, const nlohmann::json& input, const std::string& outPng);

// Directory holding the plot scripts (TIDE_PLOTS_DIR overrides the built-in path).
std::string plotsDir();

}  // namespace tide::harness
