#include "tests/sim/accuracy_budget.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "workloads/toml_fields.h"

namespace tide::sim::testing {
namespace {

using workloads::detail::TomlFields;

std::string percent(double fraction) {
  std::ostringstream o;
  o.precision(3);
  o << fraction * 100 << " %";
  return o.str();
}

Result<RowBudget> readRow(const toml::table& t, const std::string& origin) {
  TomlFields f(t, origin);
  RowBudget b;
  TIDE_RETURN_IF_ERROR(f.getString("scenario", b.scenario, true));
  TIDE_RETURN_IF_ERROR(f.getString("strategy", b.strategy, true));
  TIDE_RETURN_IF_ERROR(f.getString("span", b.span, false));
  TIDE_RETURN_IF_ERROR(f.getDouble("simulated_s", b.simulatedSeconds, true));
  TIDE_RETURN_IF_ERROR(f.getDouble("target", b.target, true));
  double budget = -1;
  TIDE_RETURN_IF_ERROR(f.getDouble("budget", budget, false));
  if (budget >= 0) b.budget = budget;
  TIDE_RETURN_IF_ERROR(f.rejectUnknown());
  if (b.simulatedSeconds <= 0 || b.target <= 0 || (b.budget && *b.budget < b.target))
    return TIDE_ERROR(Code::kInvalidArgument, origin + ": " + b.key() +
                                                  ": simulated_s and target must be positive and "
                                                  "a budget no tighter than the target");
  return b;
}

}  // namespace

const RowBudget* AccuracyBudgets::find(const std::string& key) const {
  for (const auto& r : rows)
    if (r.key() == key) return &r;
  return nullptr;
}

bool AccuracyBudgets::isByConstruction(const std::string& key) const {
  for (const auto& k : byConstruction)
    if (k == key) return true;
  return false;
}

Result<AccuracyBudgets> loadBudgets(const std::string& path) {
  std::ifstream in(path);
  if (!in) return TIDE_ERROR(Code::kNotFound, "cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  TIDE_ASSIGN_OR_RETURN(toml::table t, workloads::detail::parseToml(text.str(), path));
  AccuracyBudgets out;
  const toml::table* ratio = t["kimi_ratio"].as_table();
  const toml::array* target = ratio ? (*ratio)["target"].as_array() : nullptr;
  if (!target || target->size() != 2 || !(*target)[0].is_number() || !(*target)[1].is_number())
    return TIDE_ERROR(Code::kInvalidArgument, path + ": [kimi_ratio] needs target = [low, high]");
  out.ratioLow = (*target)[0].value<double>().value_or(0);
  out.ratioHigh = (*target)[1].value<double>().value_or(0);
  if (auto b = (*ratio)["budget"].value<double>()) out.ratioBudget = *b;
  if (const toml::array* by = t["by_construction"].as_array()) {
    for (const auto& k : *by) {
      auto v = k.value<std::string>();
      if (!v) return TIDE_ERROR(Code::kInvalidArgument, path + ": by_construction takes strings");
      out.byConstruction.push_back(*v);
    }
  }
  const toml::array* rows = t["row"].as_array();
  if (!rows) return TIDE_ERROR(Code::kInvalidArgument, path + ": no [[row]]");
  for (const auto& node : *rows) {
    const toml::table* row = node.as_table();
    if (!row) return TIDE_ERROR(Code::kInvalidArgument, path + ": a [[row]] is not a table");
    TIDE_ASSIGN_OR_RETURN(RowBudget b, readRow(*row, path));
    if (out.find(b.key()))
      return TIDE_ERROR(Code::kInvalidArgument, path + ": " + b.key() + " listed twice");
    out.rows.push_back(std::move(b));
  }
  return out;
}

std::string judgeRow(const RowBudget& b, double simulated, double published, std::string* note) {
  const double drift = simulated / b.simulatedSeconds - 1;
  if (std::abs(drift) > kPinTolerance)
    return b.key() + ": prediction moved to " + std::to_string(simulated) + " s from the pinned " +
           std::to_string(b.simulatedSeconds) + " s (" + percent(drift) + ")";
  const double error = std::abs(simulated / published - 1);
  if (error <= b.target) return "";
  if (!b.budget)
    return b.key() + ": |error| " + percent(error) + " past its target " + percent(b.target) +
           " and no budget";
  if (error > *b.budget)
    return b.key() + ": |error| " + percent(error) + " worse than its budget " + percent(*b.budget);
  if (note)
    *note = b.key() + ": known gap, |error| " + percent(error) + " (target " + percent(b.target) +
            ", budget " + percent(*b.budget) + ")";
  return "";
}

std::string judgeRatio(const AccuracyBudgets& b, double ratio, std::string* note) {
  if (ratio >= b.ratioLow && ratio <= b.ratioHigh) return "";
  const std::string range = std::to_string(b.ratioLow) + "-" + std::to_string(b.ratioHigh);
  if (ratio < b.ratioLow || !b.ratioBudget || ratio > *b.ratioBudget)
    return "Kimi-K2 broadcast/p2p ratio " + std::to_string(ratio) + " outside " + range +
           (b.ratioBudget ? " and its budget " + std::to_string(*b.ratioBudget) : "");
  if (note)
    *note = "Kimi-K2 ratio: known gap, " + std::to_string(ratio) + " (target " + range +
            ", budget " + std::to_string(*b.ratioBudget) + ")";
  return "";
}

}  // namespace tide::sim::testing
