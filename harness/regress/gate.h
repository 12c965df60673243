#pragma once
// The regression gate's verdicts: each measured metric against its baseline
// and tolerance in the budgets file.
//
//  * instruction counts (ir.<kernel>): regressed when above the baseline by
//    more than the tolerance; improved when below by more (not a failure:
//    `--update` then locks the gain in);
//  * deterministic figures (sim.*, plan.*): changed when they differ by more
//    than the tolerance in either direction (tolerance 0: equal to 1 part in
//    1e9, which floating-point rounding across compilers stays within).
//
// A baseline that was not measured (a kernel or strategy gone) and a metric
// without a baseline both fail: the file and the code disagree.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "harness/regress/budgets.h"
#include "harness/regress/callgrind.h"
#include "harness/regress/figures.h"

namespace tide::harness::regress {

enum class Verdict { kOk, kImproved, kRegressed, kChanged, kNew, kMissing };
const char* verdictName(Verdict v);
bool fails(Verdict v);

// The source under which the instruction counts' build environment (CPU,
// compiler, C library, callgrind) is recorded in the budgets file's inputs.
inline constexpr const char* kEnvironmentSource = "ir";

struct Measurement {
  std::vector<Figure> figures;  // instruction counts (unit "Ir") and deterministic figures
  std::map<std::string, InputDigests> inputs;
  std::map<std::string, FunctionProfile> profile;  // kernel -> self Ir per function
  bool planted = false;                            // the kernels ran a planted slowdown
};

struct GateRow {
  std::string name;
  std::string unit;
  std::optional<double> baseline, measured;
  double changePercent = 0;
  double tolerancePercent = 0;
  Verdict verdict = Verdict::kOk;
  std::string cause;  // why it moved, for a row that did
};

// `selected` says which metric names this run measured (the --only filter).
std::vector<GateRow> judge(const Budgets& b, const Measurement& m,
                           const std::function<bool(const std::string&)>& selected);

// The default tolerance of a metric new to the file.
double defaultTolerance(const Budgets& b, const std::string& metric);

// The budgets with the measured baselines, inputs and profiles written in,
// tolerances kept, and the baselines of selected metrics that were not
// measured (a kernel or strategy gone) dropped.
Budgets updated(const Budgets& b, const Measurement& m,
                const std::function<bool(const std::string&)>& selected);

}  // namespace tide::harness::regress
