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

// The profile keys the plan's steps are priced with: a constant no step
// uses cannot move the prediction, and is not simulated at its ends.
std::vector<std::string> usedKeys(const plan::TransferPlan& p) {
  std::vector<std::string> keys;
  auto use = [&keys](const char* k) {
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.emplace_back(k);
  };
  for (const auto& s : p.work.steps) {
    switch (s.kind) {
      case plan::StepKind::kHostOps:
        if (s.count > 0) use("host_op");
        if (s.loopSteps > 0) use("py_step");
        break;
      case plan::StepKind::kControlRound:
        if (s.count > 0) use("engine_call");
        break;
      case plan::StepKind::kPostprocess:
        if (s.count > 0) use("mla_requant");
        break;
      case plan::StepKind::kRegister:
        if (s.count > 0) use("register_page");
        break;
      default:
        break;
    }
  }
  for (const auto& l : p.work.locks)
    if (l.polled) use("lock_poll");
  return keys;
}

Result<double> predict(const sim::Scenario& sc, const plan::TransferPlan& p) {
  TIDE_ASSIGN_OR_RETURN(sim::StrategyResult r, sim::simulateScenario(sc, p, {}));
  return r.seconds;
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

Result<CompareRow> compareOne(const sim::Scenario& sc, const sync::StrategyDescriptor& d,
                              const CompareOptions& o) {
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
  if (!plan.isOk()) {
    row.applies = false;
    row.reason = plan.status().message();
    return row;
  }
  TIDE_ASSIGN_OR_RETURN(row.result, sim::simulateScenario(priced, *plan, {}));
  row.result.events.clear();
  const std::vector<std::string> used = usedKeys(*plan);
  for (const auto& c : priced.profile.constants) {
    const double v = sim::calibrationSeconds(priced.calib, c.key);
    // Zero: a step this stack does not have; unused: no step of this plan.
    if (v <= 0 || std::find(used.begin(), used.end(), c.key) == used.end()) continue;
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
  if (!row.constants.empty()) {
    TIDE_ASSIGN_OR_RETURN(double lo, predict(scaled(priced, row.constants, false, nullptr), *plan));
    TIDE_ASSIGN_OR_RETURN(double hi, predict(scaled(priced, row.constants, true, nullptr), *plan));
    // A polled lock can make time fall as a constant grows: the band holds
    // all three predictions.
    row.bandLo = std::min({row.bandLo, lo, hi});
    row.bandHi = std::max({row.bandHi, lo, hi});
  }
  row.sensitivity = o.sensitivity;
  if (o.sensitivity) {
    for (auto& c : row.constants) {
      TIDE_ASSIGN_OR_RETURN(double hi, predict(scaled(priced, row.constants, true, &c.key), *plan));
      c.deltaHi = hi - row.result.seconds;
    }
    std::stable_sort(row.constants.begin(), row.constants.end(), [](const auto& a, const auto& b) {
      return std::fabs(a.deltaHi) > std::fabs(b.deltaHi);
    });
  }
  row.wallSeconds = now() - t0;
  return row;
}

}  // namespace

const LabelRange& labelRange(sim::ConstantLabel l) {
  for (const auto& r : kLabelRanges)
    if (r.label == l) return r;
  return kLabelRanges[3];
}

Result<std::vector<CompareRow>> compareStrategies(const sim::Scenario& sc,
                                                  const CompareOptions& o) {
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
  for (const auto* d : ds) {
    std::fprintf(stderr, "  compare: %s ...\n", std::string(d->name).c_str());
    TIDE_ASSIGN_OR_RETURN(CompareRow row, compareOne(sc, *d, o));
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
    results.push_back({{"strategy", r.strategy},
                       {"profile", r.profile},
                       {"seconds", r.result.seconds},
                       {"band_seconds", {r.bandLo, r.bandHi}},
                       {"lower_bound_seconds", r.result.lowerBoundSeconds},
                       {"bottleneck", r.result.bottleneck},
                       {"ratio_to_bound", r.ratioToBound()},
                       {"critical_path", stages},
                       {"constants", constants},
                       {"wall_seconds", r.wallSeconds}});
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
    char band[40];
    std::snprintf(band, sizeof band, "[%.3f, %.3f]", r.bandLo, r.bandHi);
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
    if (!r.constants.empty()) {
      std::printf("  band from:");
      for (const auto& c : r.constants) {
        std::printf(" %s (%s, %.3g..%.3g s", c.key.c_str(), c.label.c_str(), c.lo, c.hi);
        if (r.sensitivity) std::printf(": %+.3f s at high", c.deltaHi);
        std::printf(");");
      }
      std::printf("\n");
    } else {
      std::printf(
          "  band: no priced constant in this plan (the cluster's figures time all of it)\n");
    }
    std::printf("  simulated %s in %.2f s wall (all band runs)\n", r.strategy.c_str(),
                r.wallSeconds);
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
