#include "harness/sim/compare.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "engine/sync/strategy_registry.h"
#include "harness/sim/scenario_plans.h"
#include "workloads/model.h"

namespace tide::harness {

namespace {

double now() {
  using C = std::chrono::steady_clock;
  return std::chrono::duration<double>(C::now().time_since_epoch()).count();
}

// The scenario with every constant of `keys` scaled by its range end.
sim::Scenario scaled(const sim::Scenario& sc, const std::vector<ConstantEffect>& cs, bool high,
                     const std::string* only) {
  sim::Scenario out = sc;
  for (const auto& c : cs) {
    if (only && c.key != *only) continue;
    sim::setCalibrationSeconds(out.calib, c.key, high ? c.hi : c.lo);
  }
  return out;
}

// The keys whose every use is known: the step kinds priced by each
// (sim/step_lowering.cc, countedSeconds; lock_poll by a polled lock). A key
// not listed here is taken as used by every plan: a constant is left out of
// the band only where it is proven to price nothing in the plan.
struct KeyUse {
  const char* key;
  plan::StepKind kind;  // priced by steps of this kind with count (or loop steps) > 0
  bool loopSteps;       // by the step's loop steps rather than its count
};
constexpr KeyUse kKeyUses[] = {
    {"host_op", plan::StepKind::kHostOps, false},
    {"py_step", plan::StepKind::kHostOps, true},
    {"engine_call", plan::StepKind::kControlRound, false},
    {"mla_requant", plan::StepKind::kPostprocess, false},
    {"register_page", plan::StepKind::kRegister, false},
};

bool keyUsed(const plan::TransferPlan& p, const std::string& key) {
  if (key == "lock_poll") {
    for (const auto& l : p.work.locks)
      if (l.polled) return true;
    return false;
  }
  const KeyUse* use = nullptr;
  for (const auto& u : kKeyUses)
    if (key == u.key) use = &u;
  if (!use) return true;
  for (const auto& s : p.work.steps)
    if (s.kind == use->kind && (use->loopSteps ? s.loopSteps > 0 : s.count > 0)) return true;
  return false;
}

Result<double> predict(const sim::Scenario& sc, const plan::TransferPlan& p,
                       const sim::Progress& progress) {
  TIDE_ASSIGN_OR_RETURN(sim::StrategyResult r, sim::simulateScenario(sc, p, progress));
  return r.seconds;
}

std::string fmtSeconds(double s) {
  char b[32];
  std::snprintf(b, sizeof b, s < 10 ? "%.2f s" : "%.0f s", s);
  return b;
}

}  // namespace

double inferShardCount(const sim::Scenario& sc) {
  // Every rank holds a slice of each non-expert tensor and of the routed
  // experts of its EP rank (workloads/layout.h).
  double nonExpert = 0, expert = 0;
  for (const auto& t : workloads::buildInventory(sc.model).tensors)
    (t.kind == workloads::TensorKind::kRoutedExpert ? expert : nonExpert) += 1;
  return sc.infer.worldSize() * (nonExpert + expert / std::max(1, sc.infer.ep));
}

namespace {

// Says a line with the comparison's elapsed seconds.
struct Teller {
  const CompareProgress& out;
  double t0;
  void operator()(const std::string& line) const {
    if (!out) return;
    char b[32];
    std::snprintf(b, sizeof b, "[%7.1f s] ", now() - t0);
    out(b + line);
  }
  // A long simulation's progress, as `tide sim` reports it.
  sim::Progress sim(const std::string& what) const {
    if (!out) return {};
    return [this, what](uint64_t done, uint64_t total, double simSeconds) {
      char b[160];
      std::snprintf(b, sizeof b, "%s: %llu of %llu tasks done, %.3f s simulated", what.c_str(),
                    static_cast<unsigned long long>(done), static_cast<unsigned long long>(total),
                    simSeconds);
      (*this)(b);
    };
  }
};

// The band's mode for a row under `o`, and why less than full.
BandMode chooseBand(const CompareRow& row, const CompareOptions& o, std::string* why) {
  const size_t n = row.constants.size();
  if (o.band != BandMode::kAuto) {
    if (o.band == BandMode::kNone) *why = "not computed (--band none)";
    if (o.band == BandMode::kEnds && n > 0)
      *why = "sensitivity runs not made (--band ends): each constant's own effect not measured";
    return o.band;
  }
  const double per = std::max(row.simSeconds, 1e-3);
  char b[320];
  if ((2.0 + n) * per <= o.bandBudgetSeconds) return BandMode::kFull;
  if (2.0 * per <= o.bandBudgetSeconds) {
    std::snprintf(b, sizeof b,
                  "sensitivity runs not made: %zu more simulations of ~%s each would pass "
                  "--band-budget %s (--band full makes them)",
                  n, fmtSeconds(per).c_str(), fmtSeconds(o.bandBudgetSeconds).c_str());
    *why = b;
    return BandMode::kEnds;
  }
  std::snprintf(b, sizeof b,
                "not computed: its 2 simulations (every constant low, then high) of ~%s each "
                "would pass --band-budget %s (--band ends computes it)",
                fmtSeconds(per).c_str(), fmtSeconds(o.bandBudgetSeconds).c_str());
  *why = b;
  return BandMode::kNone;
}

Result<CompareRow> compareOne(const sim::Scenario& sc, const sync::StrategyDescriptor& d,
                              const CompareOptions& o, const Teller& tell) {
  CompareRow row;
  row.strategy = std::string(d.name);
  const double t0 = now();
  TIDE_ASSIGN_OR_RETURN(sim::Scenario priced, pricedScenario(sc, d));
  row.profile = priced.profile.name;
  if (d.input == sync::PlanInput::kBoxes && o.maxInferShards > 0) {
    const double shards = inferShardCount(sc);
    if (shards > o.maxInferShards) {
      row.applies = false;
      char why[256];
      std::snprintf(why, sizeof why,
                    "a plan from boxes of %.1f M inference shards, above compare's limit of "
                    "%.1f M (--max-shards; `tide sim --strategy %s` plans it alone)",
                    shards / 1e6, o.maxInferShards / 1e6, row.strategy.c_str());
      row.reason = why;
      return row;
    }
  }
  auto plan = scenarioPlan(sc, d);
  row.planSeconds = now() - t0;
  if (!plan.isOk()) {
    row.applies = false;
    row.reason = plan.status().message();
    return row;
  }
  // Lowering a large plan takes minutes before the simulation's own
  // progress starts: say what is being lowered.
  tell(row.strategy + ": planned in " + fmtSeconds(row.planSeconds) + " (" +
       std::to_string(plan->work.steps.size()) + " steps, " + std::to_string(plan->moves.size()) +
       " moves); simulating ...");
  const double t1 = now();
  TIDE_ASSIGN_OR_RETURN(row.result, sim::simulateScenario(priced, *plan, tell.sim(row.strategy)));
  row.simSeconds = now() - t1;
  row.result.events.clear();
  tell(row.strategy + ": simulated in " + fmtSeconds(row.simSeconds) + ", " +
       std::to_string(row.result.tasks) + " tasks");
  for (const auto& c : priced.profile.constants) {
    const double v = sim::calibrationSeconds(priced.calib, c.key);
    // Zero: a step this stack does not have; unused: no step of this plan.
    if (v <= 0 || !keyUsed(*plan, c.key)) continue;
    // The profile's own range where it states one (relative to its value, so
    // a scenario's override keeps the spread); else the label's default. A
    // scenario's override has no label of its own: it keeps the profile's.
    double lo = labelRange(c.label).lo, hi = labelRange(c.label).hi;
    if (c.hasRange() && c.seconds > 0) {
      lo = c.lowSeconds / c.seconds;
      hi = c.highSeconds / c.seconds;
    }
    row.constants.push_back({c.key, sim::constantLabelName(c.label), v, v * lo, v * hi, 0});
  }
  row.bandLo = row.bandHi = row.result.seconds;
  if (row.constants.empty()) {
    // Proven: no step of the plan is priced by a constant that varies.
    row.band = o.band != BandMode::kNone;
    if (!row.band) row.bandReason = "not computed (--band none)";
    row.wallSeconds = now() - t0;
    return row;
  }
  const BandMode mode = chooseBand(row, o, &row.bandReason);
  if (mode == BandMode::kNone) {
    tell(row.strategy + ": band " + row.bandReason);
    row.wallSeconds = now() - t0;
    return row;
  }
  const double t2 = now();
  const std::string runs = std::to_string(2 + (mode == BandMode::kFull ? row.constants.size() : 0));
  TIDE_ASSIGN_OR_RETURN(double lo,
                        predict(scaled(priced, row.constants, false, nullptr), *plan,
                                tell.sim(row.strategy + " (band run 1 of " + runs + ")")));
  TIDE_ASSIGN_OR_RETURN(double hi,
                        predict(scaled(priced, row.constants, true, nullptr), *plan,
                                tell.sim(row.strategy + " (band run 2 of " + runs + ")")));
  row.bandRuns = 2;
  // A polled lock can make time fall as a constant grows: the band holds
  // all three predictions.
  row.bandLo = std::min({row.bandLo, lo, hi});
  row.bandHi = std::max({row.bandHi, lo, hi});
  row.band = true;
  row.sensitivity = mode == BandMode::kFull;
  if (row.sensitivity) {
    for (auto& c : row.constants) {
      const std::string what =
          row.strategy + " (band run " + std::to_string(row.bandRuns + 1) + " of " + runs + ")";
      TIDE_ASSIGN_OR_RETURN(
          double at, predict(scaled(priced, row.constants, true, &c.key), *plan, tell.sim(what)));
      ++row.bandRuns;
      c.deltaHi = at - row.result.seconds;
    }
    std::stable_sort(row.constants.begin(), row.constants.end(), [](const auto& a, const auto& b) {
      return std::fabs(a.deltaHi) > std::fabs(b.deltaHi);
    });
  }
  tell(row.strategy + ": band in " + fmtSeconds(now() - t2) + " (" + std::to_string(row.bandRuns) +
       " runs)");
  row.wallSeconds = now() - t0;
  return row;
}

}  // namespace

const char* bandModeName(BandMode m) {
  switch (m) {
    case BandMode::kFull:
      return "full";
    case BandMode::kEnds:
      return "ends";
    case BandMode::kNone:
      return "none";
    case BandMode::kAuto:
      break;
  }
  return "auto";
}

Result<BandMode> parseBandMode(std::string_view s) {
  for (BandMode m : {BandMode::kFull, BandMode::kEnds, BandMode::kNone, BandMode::kAuto})
    if (s == bandModeName(m)) return m;
  return TIDE_ERROR(Code::kInvalidArgument,
                    "band must be one of auto, full, ends, none (got '" + std::string(s) + "')");
}

const LabelRange& labelRange(sim::ConstantLabel l) {
  for (const auto& r : kLabelRanges)
    if (r.label == l) return r;
  return kLabelRanges[3];
}

Result<std::vector<CompareRow>> compareStrategies(const sim::Scenario& sc, const CompareOptions& o,
                                                  const CompareProgress& progress) {
  if (o.bandBudgetSeconds < 0)
    return TIDE_ERROR(Code::kInvalidArgument, "the band budget must be >= 0 seconds");
  const Teller tell{progress, now()};
  std::vector<const sync::StrategyDescriptor*> ds;
  if (o.strategies.empty()) {
    for (const auto& d : sync::strategyTable())
      if (d.simulated()) ds.push_back(&d);
  } else {
    for (const auto& n : o.strategies) {
      TIDE_ASSIGN_OR_RETURN(const sync::StrategyDescriptor* d, sync::findStrategy(n));
      if (!d->simulated())
        return TIDE_ERROR(Code::kInvalidArgument,
                          "strategy '" + n +
                              "' delivers another strategy's plan; compare its "
                              "planner instead");
      ds.push_back(d);
    }
  }
  std::vector<CompareRow> rows;
  for (size_t i = 0; i < ds.size(); ++i) {
    tell(std::string(ds[i]->name) + " (" + std::to_string(i + 1) + " of " +
         std::to_string(ds.size()) + ") ...");
    TIDE_ASSIGN_OR_RETURN(CompareRow row, compareOne(sc, *ds[i], o, tell));
    if (!row.applies) tell(row.strategy + ": not applicable");
    rows.push_back(std::move(row));
  }
  std::stable_sort(rows.begin(), rows.end(), [](const CompareRow& a, const CompareRow& b) {
    if (a.applies != b.applies) return a.applies;
    return a.applies && a.result.seconds < b.result.seconds;
  });
  return rows;
}

nlohmann::json compareJson(const sim::Scenario& sc, const std::vector<CompareRow>& rows) {
  nlohmann::json results = nlohmann::json::array(), skipped = nlohmann::json::array();
  for (const auto& r : rows) {
    if (!r.applies) {
      skipped.push_back({{"strategy", r.strategy}, {"reason", r.reason}});
      continue;
    }
    nlohmann::json stages = nlohmann::json::array();
    for (const auto& s : r.result.stages)
      if (s.critical > 0) stages.push_back({{"stage", s.name}, {"critical_seconds", s.critical}});
    nlohmann::json constants = nlohmann::json::array();
    for (const auto& c : r.constants) {
      nlohmann::json cj = {{"key", c.key},
                           {"label", c.label},
                           {"seconds", c.seconds},
                           {"range_seconds", {c.lo, c.hi}}};
      if (r.sensitivity) cj["delta_at_high_seconds"] = c.deltaHi;
      constants.push_back(std::move(cj));
    }
    nlohmann::json row = {{"strategy", r.strategy},
                          {"profile", r.profile},
                          {"seconds", r.result.seconds},
                          {"band_seconds", nullptr},
                          {"lower_bound_seconds", r.result.lowerBoundSeconds},
                          {"bottleneck", r.result.bottleneck},
                          {"ratio_to_bound", r.ratioToBound()},
                          {"critical_path", stages},
                          {"constants", constants},
                          {"band_runs", r.bandRuns},
                          {"plan_wall_seconds", r.planSeconds},
                          {"simulation_wall_seconds", r.simSeconds},
                          {"wall_seconds", r.wallSeconds}};
    if (r.band) row["band_seconds"] = {r.bandLo, r.bandHi};
    // Null band, or a band without its sensitivity runs: the reason.
    if (!r.bandReason.empty()) row["band_reason"] = r.bandReason;
    results.push_back(std::move(row));
  }
  nlohmann::json ranges = nlohmann::json::array();
  for (const auto& l : kLabelRanges) {
    ranges.push_back(
        {{"label", sim::constantLabelName(l.label)}, {"relative", {l.lo, l.hi}}, {"why", l.why}});
  }
  return {{"schema", "tide.sim.compare/1"},
          {"scenario", sc.name},
          {"results", results},
          {"not_applicable", skipped},
          {"default_ranges", ranges}};
}

void printCompare(const sim::Scenario& sc, const std::vector<CompareRow>& rows) {
  std::printf("compare %s (each strategy priced by its own profile%s)\n", sc.name.c_str(),
              sc.profileGiven ? "; overridden by the scenario's [strategy] profile" : "");
  std::printf("%-4s %-26s %-16s %9s %19s %9s %7s  %s\n", "rank", "strategy", "profile", "seconds",
              "band_s", "bound_s", "ratio", "bottleneck");
  int rank = 0;
  for (const auto& r : rows) {
    if (!r.applies) continue;
    char band[40] = "not computed";
    if (r.band) std::snprintf(band, sizeof band, "[%.3f, %.3f]", r.bandLo, r.bandHi);
    std::printf("%-4d %-26s %-16s %9.3f %19s %9.3f %7.2f  %s\n", ++rank, r.strategy.c_str(),
                r.profile.c_str(), r.result.seconds, band, r.result.lowerBoundSeconds,
                r.ratioToBound(), r.result.bottleneck.c_str());
  }
  for (const auto& r : rows) {
    if (!r.applies) continue;
    std::printf("\n%s: critical path by stage:", r.strategy.c_str());
    std::vector<const sim::StageStats*> st;
    for (const auto& s : r.result.stages)
      if (s.critical > 0) st.push_back(&s);
    std::stable_sort(st.begin(), st.end(),
                     [](const auto* a, const auto* b) { return a->critical > b->critical; });
    for (const auto* s : st) std::printf(" %s %.3f s;", s->name.c_str(), s->critical);
    std::printf("\n");
    if (!r.band) std::printf("  band: %s\n", r.bandReason.c_str());
    if (!r.constants.empty()) {
      std::printf("  %s:", r.band ? "band from" : "constants that would set it");
      for (const auto& c : r.constants) {
        std::printf(" %s (%s, %.3g..%.3g s", c.key.c_str(), c.label.c_str(), c.lo, c.hi);
        if (r.sensitivity) std::printf(": %+.3f s at high", c.deltaHi);
        std::printf(");");
      }
      std::printf("\n");
      if (r.band && !r.bandReason.empty()) std::printf("  band: %s\n", r.bandReason.c_str());
    } else if (r.band) {
      std::printf(
          "  band: no priced constant in this plan (the cluster's figures time all of it)\n");
    }
    std::printf("  %s: planned in %.2f s, simulated in %.2f s, %d band runs; %.2f s wall in all\n",
                r.strategy.c_str(), r.planSeconds, r.simSeconds, r.bandRuns, r.wallSeconds);
  }
  for (const auto& r : rows)
    if (!r.applies) std::printf("not applicable: %s: %s\n", r.strategy.c_str(), r.reason.c_str());
  std::printf(
      "ranges: each profile's own low/high; where a profile gives none, relative ranges by "
      "label:");
  for (const auto& l : kLabelRanges)
    std::printf(" %s x[%.2f, %.2f];", sim::constantLabelName(l.label), l.lo, l.hi);
  std::printf("\n");
}

}  // namespace tide::harness
