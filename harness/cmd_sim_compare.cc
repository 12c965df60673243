// `tide sim compare --scenario F.toml [--json F]`: every strategy that
// applies to the scenario, ranked by predicted time (harness/sim/compare.h).

#include <cstdio>
#include <memory>
#include <sstream>

#include "harness/command.h"
#include "harness/run_context.h"
#include "harness/sim/compare.h"
#include "harness/sim/scenario_plans.h"
#include "sim/report.h"

namespace tide::harness {

namespace {

struct CompareCliOptions {
  std::string scenario, json, strategies;
  std::string band = "auto";
  double bandBudget = 120;
  bool noSensitivity = false;
  double maxShards = 4e6;
};

void runCompare(const CompareCliOptions& o) {
  sim::Scenario sc = orThrow(sim::loadScenario(o.scenario));
  CompareOptions co;
  co.band = orThrow(parseBandMode(o.band));
  if (o.noSensitivity) {
    if (co.band != BandMode::kAuto && co.band != BandMode::kEnds)
      throw StatusError(
          TIDE_ERROR(Code::kInvalidArgument,
                     "--no-sensitivity is --band ends; it contradicts --band " + o.band));
    co.band = BandMode::kEnds;
  }
  co.bandBudgetSeconds = o.bandBudget;
  co.maxInferShards = o.maxShards;
  std::stringstream ss(o.strategies);
  for (std::string n; std::getline(ss, n, ',');)
    if (!n.empty()) co.strategies.push_back(n);
  // Progress on stderr: a comparison at scale runs for minutes.
  std::vector<CompareRow> rows = orThrow(compareStrategies(sc, co, [](const std::string& line) {
    std::fprintf(stderr, "  compare %s\n", line.c_str());
  }));
  printCompare(sc, rows);
  if (!o.json.empty()) {
    nlohmann::json out = compareJson(sc, rows);
    out["context"] = runContext();
    orThrow(sim::writeJsonFile(o.json, out));
  }
}

}  // namespace

void addSimCompareCommand(CLI::App& sim) {
  auto* cmd = sim.add_subcommand(
      "compare", "Rank every strategy that applies to a scenario, each priced by its own profile");
  auto o = std::make_shared<CompareCliOptions>();
  cmd->add_option("--scenario", o->scenario, "scenario TOML (docs/formats/scenario.md)")
      ->required();
  cmd->add_option("--json", o->json, "write the ranking as JSON (tide.sim.compare/1)");
  cmd->add_option("--strategies", o->strategies,
                  "comma-separated strategies (default: every simulated one)");
  cmd->add_option("--band", o->band,
                  "band from the constants' ranges: full (the ends, then each constant alone at "
                  "its high end), ends, none, or auto (default: the most of these whose runs fit "
                  "in --band-budget; a band not computed says why)");
  cmd->add_option("--band-budget", o->bandBudget,
                  "with --band auto: wall seconds one strategy's band runs may take, each "
                  "estimated as long as its nominal simulation (default 120)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--no-sensitivity", o->noSensitivity,
                "--band ends: skip the one-constant-at-a-time runs (the band is still given)");
  cmd->add_option("--max-shards", o->maxShards,
                  "list a plan from boxes as not applicable above this many inference shards "
                  "(default 4e6; 0: no limit)")
      ->check(CLI::NonNegativeNumber);
  cmd->callback([o] { runCompare(*o); });
}

}  // namespace tide::harness
