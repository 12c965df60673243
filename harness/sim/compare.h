#pragma once
// `tide sim compare`: every strategy that applies to a scenario, each priced
// by its own profile (scenario_plans.h), ranked by predicted time, with its
// lower bound and bottleneck, its per-stage critical path, and a band from
// the ranges of its profile's constants.
//
// Ranges: a constant's own low/high from its profile, else a relative range
// by its label (kLabelRanges below, docs/designs.md). Each strategy is
// planned once; the band re-simulates that same plan with every constant at
// the low end, then every constant at the high end; the constants that
// dominate it are those whose high end alone moves the prediction most (one
// more simulation each). A constant that no step of the plan is priced by
// cannot move the prediction and is not simulated. At scale one simulation
// takes minutes, so how much of the band is computed is a choice (BandMode),
// and a band not computed says why.

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/status.h"
#include "sim/cost_profile.h"
#include "sim/scenario.h"
#include "sim/simulator.h"

namespace tide::harness {

// The relative range a constant of that label is given: [value * lo, value * hi].
struct LabelRange {
  sim::ConstantLabel label;
  double lo, hi;
  const char* why;
};
inline constexpr LabelRange kLabelRanges[] = {
    {sim::ConstantLabel::kDatasheet, 0.9, 1.1,
     "a published specification or the modelled code: +-10 % for what it leaves out"},
    {sim::ConstantLabel::kMicroBenchmark, 0.75, 1.5,
     "measured on another host than the modelled one: -25 % / +50 %"},
    {sim::ConstantLabel::kFittedOn, 0.7, 1.3, "fitted on a few published rows: +-30 %"},
    {sim::ConstantLabel::kEstimate, 1.0 / 3, 3.0, "an order of magnitude: a factor of 3 each way"},
};
const LabelRange& labelRange(sim::ConstantLabel l);

struct ConstantEffect {
  std::string key, label;
  double seconds = 0;     // the value as applied
  double lo = 0, hi = 0;  // its range
  double deltaHi = 0;     // prediction at `hi` alone minus the nominal one
};

// How much of the band a comparison computes, per strategy.
enum class BandMode {
  kFull,  // the ends, and each constant alone at its high end (2 + n runs)
  kEnds,  // the ends only (2 runs)
  kNone,  // no band
  // Full, or the ends, or none: the most whose runs, estimated from the
  // nominal simulation's wall time, fit in CompareOptions::bandBudgetSeconds.
  kAuto,
};
const char* bandModeName(BandMode m);
[[nodiscard]] Result<BandMode> parseBandMode(std::string_view s);

struct CompareRow {
  std::string strategy, profile;
  bool applies = true;
  std::string reason;  // why it does not apply
  sim::StrategyResult result;
  double bandLo = 0, bandHi = 0;
  bool band = false;       // bandLo/bandHi computed
  std::string bandReason;  // why the band, or its sensitivity runs, were not computed
  std::vector<ConstantEffect> constants;  // by |deltaHi|, largest first when sensitivity
  double planSeconds = 0;                 // wall time of the plan
  double simSeconds = 0;                  // wall time of the nominal simulation
  double wallSeconds = 0;                 // the plan and all of this row's simulations
  int bandRuns = 0;                       // simulations beyond the nominal one
  bool sensitivity = false;               // deltaHi measured
  double ratioToBound() const {
    return result.lowerBoundSeconds > 0 ? result.seconds / result.lowerBoundSeconds : 0;
  }
};

struct CompareOptions {
  std::vector<std::string> strategies;  // empty: every simulated strategy
  BandMode band = BandMode::kAuto;
  // kAuto: wall seconds one strategy's band runs may take, each estimated as
  // long as its nominal simulation (the same plan, lowered and run again).
  double bandBudgetSeconds = 120;
  // A plan from boxes grows with the shards the inference ranks hold (one
  // move or more each); above this many the strategy is listed as not
  // applicable with the count, so that a comparison ends (0: no limit).
  // `tide sim --strategy S` plans it alone.
  double maxInferShards = 4e6;
};

// What a box-level plan of the scenario starts from: the shards all
// inference ranks hold, counted from the model's tensors and the layout.
double inferShardCount(const sim::Scenario& sc);

// Told a line of progress (a strategy planned, simulated, its band; a long
// simulation's tasks done), with the comparison's elapsed seconds.
using CompareProgress = std::function<void(const std::string& line)>;

// Rows in rank order: applicable ones by predicted time, then the others.
[[nodiscard]] Result<std::vector<CompareRow>> compareStrategies(
    const sim::Scenario& sc, const CompareOptions& o, const CompareProgress& progress = {});

// {"schema":"tide.sim.compare/1","scenario":..,"results":[..]}
nlohmann::json compareJson(const sim::Scenario& sc, const std::vector<CompareRow>& rows);
void printCompare(const sim::Scenario& sc, const std::vector<CompareRow>& rows);

}  // namespace tide::harness
