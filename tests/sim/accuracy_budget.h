#pragma once
// The simulator's accuracy budgets (results/budgets/sim-accuracy.toml): per
// published row its pinned prediction, its target error and, for a known
// gap, the error it may not get worse than. Test-side only: the file records
// what the tests hold the simulator to.

#include <optional>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace tide::sim::testing {

struct RowBudget {
  std::string scenario, strategy, span;  // span "" is the whole update
  double simulatedSeconds = 0;           // pinned prediction
  double target = 0;                     // |error| aimed for
  std::optional<double> budget;          // |error| not to exceed while past the target
  std::string key() const { return scenario + "/" + strategy + (span.empty() ? "" : "/" + span); }
};

struct AccuracyBudgets {
  std::vector<RowBudget> rows;
  double ratioLow = 0, ratioHigh = 0;  // Kimi-K2 broadcast / p2p target
  std::optional<double> ratioBudget;   // the ratio not to exceed while above the target
  // Figures not validated: their model constant was derived from them.
  std::vector<std::string> byConstruction;
  const RowBudget* find(const std::string& key) const;
  bool isByConstruction(const std::string& key) const;
};

Result<AccuracyBudgets> loadBudgets(const std::string& path);

// Relative drift a pinned prediction may show (deterministic, so only a
// change of the model or of a scenario moves it).
inline constexpr double kPinTolerance = 0.005;

// Why a row fails, or "" when it holds: its prediction within kPinTolerance
// of the pin, and its |error| within the target or, past it, within the
// budget. `note` gets the known gap's line when the row holds on its budget.
std::string judgeRow(const RowBudget& b, double simulated, double published, std::string* note);
// The same for the Kimi-K2 ratio (broadcast / p2p).
std::string judgeRatio(const AccuracyBudgets& b, double ratio, std::string* note);

}  // namespace tide::sim::testing
