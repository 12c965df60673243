// `tide compare BASE NEW [MORE...]`: regression check between result sets.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string_view>

#include "engine/core/parse.h"
#include "harness/command.h"
#include "harness/compare/comparison.h"
#include "harness/flag_check.h"
#include "harness/output_path.h"
#include "harness/plot_runner.h"
#include "harness/run_context.h"

namespace tide::harness {
namespace {

struct CompareArgs {
  std::vector<std::string> sets;
  double threshold = 5.0;
  std::vector<std::string> thresholdFor;
  double alpha = 0.05;
  size_t minSamples = 9;
  std::string json;
  std::string plot;
  bool noFail = false;
};

Result<std::pair<std::string, double>> parseRule(const std::string& rule) {
  auto eq = rule.rfind('=');
  if (eq == std::string::npos || eq == 0)
    return TIDE_ERROR(Code::kInvalidArgument,
                      "--threshold-for wants REGEX=PERCENT, got '" + rule + "'");
  auto pct = parseDouble(std::string_view(rule).substr(eq + 1), "percent");
  if (!pct.isOk() || *pct < 0)
    return TIDE_ERROR(Code::kInvalidArgument, "bad percent in --threshold-for '" + rule + "'");
  return std::make_pair(rule.substr(0, eq), *pct);
}

void printTable(const std::vector<MetricComparison>& rows) {
  std::printf("%-48s %14s %14s %9s %9s %6s  %s\n", "metric", "base median", "new median", "change",
              "p-value", "limit", "verdict");
  for (const auto& r : rows) {
    std::string unit = r.unit.empty() ? "" : " " + r.unit;
    std::printf("%-48s %14.4g %14.4g %+8.2f%% %9.4f %5.1f%%  %s%s\n", r.name.c_str(), r.baseMedian,
                r.newMedian, r.changePercent, r.pValue, r.thresholdPercent, verdictName(r.verdict),
                unit.empty() ? "" : ("  [" + r.unit + "]").c_str());
  }
}

nlohmann::json historyJson(const std::vector<ResultSet>& sets) {
  nlohmann::json h = nlohmann::json::object();
  h["sets"] = nlohmann::json::array();
  for (const auto& s : sets) h["sets"].push_back(s.label);
  h["metrics"] = nlohmann::json::object();
  for (const auto& [name, m] : sets.back().metrics) {
    nlohmann::json row = nlohmann::json::array();
    for (const auto& s : sets) {
      auto it = s.metrics.find(name);
      row.push_back(it == s.metrics.end() ? nlohmann::json(nullptr)
                                          : nlohmann::json(median(it->second.values)));
    }
    h["metrics"][name] = {{"unit", m.unit}, {"medians", row}};
  }
  return h;
}

void run(const CompareArgs& a) {
  if (!(a.threshold >= 0) || !std::isfinite(a.threshold)) {
    throw flagError("--threshold", ">= 0", a.threshold);
  }
  // Before the comparison, not after it has been printed.
  if (!a.plot.empty()) orThrow(checkOutputPath("--plot", a.plot));
  CompareOptions opt;
  opt.thresholdPercent = a.threshold;
  opt.alpha = a.alpha;
  opt.minSamples = a.minSamples;
  for (const auto& r : a.thresholdFor) opt.perMetric.push_back(orThrow(parseRule(r)));
  std::vector<ResultSet> sets;
  for (const auto& p : a.sets) sets.push_back(orThrow(loadResultSet(p)));
  auto rows = orThrow(compareSets(sets.front(), sets.back(), opt));
  // Nothing compared is no verdict: a wrong file or metric names, not a pass.
  if (std::none_of(rows.begin(), rows.end(),
                   [](const MetricComparison& r) { return r.verdict != Verdict::kMissing; })) {
    throw StatusError(TIDE_ERROR(
        Code::kInvalidArgument,
        "no metrics in common between " + sets.front().label + " and " + sets.back().label));
  }
  printTable(rows);

  int regressions = 0;
  nlohmann::json out = {{"schema", "tide.compare/1"},
                        {"base", sets.front().label},
                        {"new", sets.back().label},
                        {"alpha", a.alpha},
                        {"metrics", nlohmann::json::array()}};
  out["context"] = runContext();
  for (const auto& r : rows) {
    regressions += r.verdict == Verdict::kRegressed;
    out["metrics"].push_back({{"name", r.name},
                              {"unit", r.unit},
                              {"better", r.higherIsBetter ? "higher" : "lower"},
                              {"base_median", r.baseMedian},
                              {"new_median", r.newMedian},
                              {"base_samples", r.baseCount},
                              {"new_samples", r.newCount},
                              {"change_percent", r.changePercent},
                              {"p_value", r.pValue},
                              {"threshold_percent", r.thresholdPercent},
                              {"verdict", verdictName(r.verdict)}});
  }
  out["regressions"] = regressions;
  if (sets.size() > 2 || !a.plot.empty()) out["history"] = historyJson(sets);
  if (!a.json.empty()) {
    std::ofstream f(a.json);
    f << out.dump(2) << "\n";
    if (!f) throw StatusError(TIDE_ERROR(Code::kUnavailable, "cannot write " + a.json));
  }
  if (!a.plot.empty()) orThrow(runPlot("history.py", out["history"], a.plot));
  std::printf("%d significant regression(s) beyond threshold across %zu metrics\n", regressions,
              rows.size());
  if (regressions > 0 && !a.noFail)
    throw CLI::RuntimeError("performance regression detected (see table above)", 1);
}

}  // namespace

void addCompareCommand(CLI::App& app) {
  auto args = std::make_shared<CompareArgs>();
  auto* cmd = app.add_subcommand(
      "compare",
      "Compare result sets (Google Benchmark JSON or tide results with samples): change, "
      "Mann-Whitney U test, verdict; exit 1 on a significant regression");
  cmd->add_option("sets", args->sets, "BASE NEW [MORE...] files or directories (oldest first)")
      ->required()
      ->expected(2, 1000)
      ->check(CLI::ExistingPath);
  cmd->add_option("--threshold", args->threshold, "regression threshold in % (default 5)");
  cmd->add_option("--threshold-for", args->thresholdFor,
                  "per-metric threshold REGEX=PERCENT (first match wins)");
  cmd->add_option("--alpha", args->alpha, "significance level (default 0.05)")
      ->check(CLI::Range(1e-9, 0.5));
  cmd->add_option("--min-samples", args->minSamples,
                  "samples per side needed for a verdict (default 9)")
      ->check(CLI::Range(2, 100000));
  cmd->add_option("--json", args->json, "write the comparison as JSON");
  cmd->add_option("--plot", args->plot, "write a PNG of metric medians across all sets");
  cmd->add_flag("--no-fail", args->noFail, "report regressions but exit 0 (CI noise reports)");
  cmd->callback([args] { run(*args); });
}

}  // namespace tide::harness
