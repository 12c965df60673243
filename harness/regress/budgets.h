#pragma once
// The regression gate's one thresholds file (results/budgets/regressions.toml,
// docs/regressions.md): what to measure, and per metric its baseline and
// tolerance. The part above the `[metrics]` line is written by hand (what is
// measured, default tolerances, comments); everything from `[metrics]` on is
// written by `tide regress check --update`, which keeps each metric's
// tolerance and rewrites its baseline, the digests of the inputs the figures
// came from (to tell an input change from a code change) and the
// per-function instruction profile of each kernel (to name what grew).

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace tide::harness::regress {

// One `[[plan]]` problem: the flags of `tide plan`.
struct PlanProblem {
  std::string name;
  std::string model;
  int scale = 1;
  std::string train, infer, cluster, strategy;
};

struct MetricBudget {
  std::optional<double> baseline;  // none: a metric added by hand, not yet measured
  double tolerancePercent = 0;
};

// Digests of one source's inputs, by part ("cluster", "model", ...).
using InputDigests = std::map<std::string, std::string>;
// Self instructions per function of one kernel (the largest ones).
using FunctionProfile = std::map<std::string, double>;

struct Budgets {
  std::string path;
  std::string handWritten;  // the file up to the `[metrics]` line, verbatim
  // [instructions]
  double irTolerancePercent = 3.0;
  std::vector<std::string> kernels;  // empty: every kernel tide_kernels has
  // [sim]
  std::vector<std::string> scenarios;
  double simTolerancePercent = 0;
  // [[plan]]
  std::vector<PlanProblem> plans;
  double planTolerancePercent = 0;  // a new plan metric's (0: exact)
  // Generated sections.
  std::map<std::string, MetricBudget> metrics;
  std::map<std::string, InputDigests> inputs;      // source ("sim.<scenario>") -> digests
  std::map<std::string, FunctionProfile> profile;  // kernel -> functions
};

[[nodiscard]] Result<Budgets> loadBudgets(const std::string& path);

// The hand-written part as read, then the generated sections from `b`.
[[nodiscard]] Status writeBudgets(const Budgets& b, const std::string& path);

}  // namespace tide::harness::regress
