#pragma once
// The deterministic figures the regression gate compares exactly: the
// simulator's predictions of a scenario (as `tide sim --scenario F --json`
// reports them) and the plan of a fixed problem (as `tide plan --json`):
// its bytes by path, moves and lower bound. Each source also yields digests
// of its inputs (model, layouts, cluster, strategy, cost profile), so that a
// changed figure is shown with its cause: an input that changed, or, with
// every input the same, the code.

#include <map>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "harness/regress/budgets.h"

namespace tide::harness::regress {

struct Figure {
  std::string name;  // "sim.<scenario>.<strategy>.update_s", "plan.<name>.network_bytes", ...
  std::string unit;  // "s", "B", "moves"
  double value = 0;
};

struct FigureSet {
  std::vector<Figure> figures;
  std::map<std::string, InputDigests> inputs;  // by source: "sim.<scenario>", "plan.<name>"
};

// Every strategy the scenario names, simulated.
[[nodiscard]] Result<FigureSet> measureScenario(const std::string& path);

[[nodiscard]] Result<FigureSet> measurePlan(const PlanProblem& p);

}  // namespace tide::harness::regress
