#pragma once
// The simulator's accuracy on the published runs in `tide reproduce`: the
// part "sim_crossval" runs `tide sim crossval` with the settings of the
// regression gate (results/budgets/sim-crossval.toml), and the report shows
// each row's held-out prediction (the constants fitted without its
// scenario) beside its in-sample one (fitted on every row). The held-out
// error is the one that counts (docs/sim.md, Calibration).

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/reproduce/report.h"

namespace tide::harness::reproduce {

inline constexpr const char* kCrossvalPart = "sim_crossval";

// `tide sim crossval` arguments after "sim crossval" from the gate's budget
// file under `source` (profile, scenarios, free constants, grid); empty with
// `why` set when the file is missing or malformed.
std::vector<std::string> crossvalArgs(const std::string& source, std::string* why);

// {"rows":[{name, strategy, published_s, held_out_s, held_out_error,
// in_sample_s, in_sample_error}], "held_out": {mean_abs_error, max_abs_error},
// "in_sample": {...}, "winner_right", "rows_total", "free"}; null when the
// part did not run or wrote no tide.sim.crossval/1 document.
nlohmann::json crossvalJson(const ReportInput& in);

// The section of REPORT.md ("" when crossvalJson is null).
std::string crossvalMarkdown(const nlohmann::json& cv);

}  // namespace tide::harness::reproduce
