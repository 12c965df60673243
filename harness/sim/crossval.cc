#include "harness/sim/crossval.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace tide::harness {
namespace {

Result<std::vector<bool>> fitMask(const CalibrationSet& set, const std::vector<std::string>& fit) {
  std::vector<bool> use(set.rows().size(), false);
  for (const auto& name : fit) {
    bool any = false;
    for (size_t r = 0; r < set.rows().size(); ++r) {
      const auto& row = set.rows()[r];
      if (name == row.scenario || name == row.name()) use[r] = any = true;
    }
    if (!any)
      return TIDE_ERROR(Code::kInvalidArgument,
                        "--fit: '" + name + "' is no scenario or scenario/strategy of the rows");
  }
  return use;
}

// The fitted constants applied to the given rows by full simulation.
Result<std::vector<PredictedRow>> simulateRows(const CalibrationSet& set,
                                               const std::vector<sim::FitParam>& params,
                                               const std::vector<double>& x,
                                               const std::vector<bool>& which) {
  std::vector<PredictedRow> out;
  for (size_t r = 0; r < set.rows().size(); ++r) {
    if (!which[r]) continue;
    const auto& row = set.rows()[r];
    TIDE_ASSIGN_OR_RETURN(double s, set.predict(r, params, x));
    out.push_back({row.scenario, row.strategy, row.publishedSeconds, s, x});
  }
  return out;
}

struct Summary {
  std::map<std::string, double> mean, max;
};

Summary summarize(const std::vector<PredictedRow>& rows) {
  Summary s;
  std::map<std::string, int> n;
  for (const auto& r : rows) {
    std::string k = strategyKind(r.strategy);
    double e = std::fabs(r.error());
    s.mean[k] += e;
    s.max[k] = std::max(s.max[k], e);
    ++n[k];
  }
  for (auto& [k, v] : s.mean) v /= n[k];
  return s;
}

}  // namespace

std::string strategyKind(const std::string& strategy) {
  if (strategy.find("broadcast") != std::string::npos) return "broadcast";
  if (strategy.find("p2p") != std::string::npos) return "p2p";
  return strategy;
}

Result<CalibrateResult> calibrate(const CalibrationSet& set, const sim::ResponseGrid& grid,
                                  const std::vector<std::string>& fit) {
  TIDE_ASSIGN_OR_RETURN(std::vector<bool> use, fitMask(set, fit));
  CalibrateResult r;
  TIDE_ASSIGN_OR_RETURN(r.fit, sim::fitConstants(grid, set.published(), use));
  TIDE_ASSIGN_OR_RETURN(r.rows, simulateRows(set, grid.params(), r.fit.constants, use));
  return r;
}

sim::CostProfile fittedProfile(const CalibrationSet& set, const std::vector<sim::FitParam>& params,
                               const CalibrateResult& r, const std::string& command) {
  sim::CostProfile p = set.profile();
  std::vector<std::string> names;
  std::vector<double> residuals;
  for (const auto& row : r.rows) {
    names.push_back(row.scenario + "/" + row.strategy);
    residuals.push_back(row.error());
  }
  for (size_t d = 0; d < params.size(); ++d) {
    for (auto& c : p.constants) {
      if (c.key != params[d].key) continue;
      c.seconds = r.fit.constants[d];
      c.label = sim::ConstantLabel::kFittedOn;
      c.rows = names;
      c.residuals = residuals;
      c.command = "";
      c.source = "fitted by `" + command + "` within [low, high] (was: " + c.source + ")";
      (void)sim::setCalibrationSeconds(p.calib, c.key, c.seconds);
    }
  }
  return p;
}

Result<CrossvalResult> crossvalidate(const CalibrationSet& set, const sim::ResponseGrid& grid) {
  CrossvalResult out;
  out.params = grid.params();
  out.gridPoints = grid.pointsPerDim();
  out.profile = set.profile().name;
  const auto& rows = set.rows();
  const std::vector<double> published = set.published();
  for (size_t s = 0; s < set.scenarios().size(); ++s) {
    std::vector<bool> use(rows.size()), held(rows.size());
    for (size_t r = 0; r < rows.size(); ++r) {
      held[r] = rows[r].scenarioIndex == s;
      use[r] = !held[r];
    }
    TIDE_ASSIGN_OR_RETURN(sim::FitResult f, sim::fitConstants(grid, published, use));
    TIDE_ASSIGN_OR_RETURN(auto pred, simulateRows(set, out.params, f.constants, held));
    for (auto& p : pred) out.heldOut.push_back(std::move(p));
    // The winner: the faster strategy, as published and as predicted.
    std::vector<const PredictedRow*> mine;
    for (const auto& p : out.heldOut)
      if (p.scenario == set.scenarios()[s].name) mine.push_back(&p);
    if (mine.size() >= 2) {
      ++out.rowsTotal;
      auto byPub = std::min_element(mine.begin(), mine.end(), [](auto* a, auto* b) {
        return a->publishedSeconds < b->publishedSeconds;
      });
      auto byPred = std::min_element(mine.begin(), mine.end(), [](auto* a, auto* b) {
        return a->predictedSeconds < b->predictedSeconds;
      });
      if ((*byPub)->strategy == (*byPred)->strategy) ++out.winnerRight;
    }
  }
  std::vector<bool> all(rows.size(), true);
  TIDE_ASSIGN_OR_RETURN(sim::FitResult f, sim::fitConstants(grid, published, all));
  TIDE_ASSIGN_OR_RETURN(out.inSample, simulateRows(set, out.params, f.constants, all));
  return out;
}

nlohmann::json CrossvalResult::toJson() const {
  nlohmann::json j;
  j["schema"] = "tide.sim.crossval/1";
  j["profile"] = profile;
  j["grid_points"] = gridPoints;
  j["free"] = nlohmann::json::array();
  for (const auto& p : params)
    j["free"].push_back({{"key", p.key}, {"low_s", p.low}, {"high_s", p.high}});
  auto rowsJson = [](const std::vector<PredictedRow>& v, const std::vector<sim::FitParam>& ps) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& r : v) {
      nlohmann::json c;
      for (size_t d = 0; d < ps.size(); ++d) c[ps[d].key + "_s"] = r.constants[d];
      a.push_back({{"name", r.scenario},
                   {"strategy", r.strategy},
                   {"published_s", r.publishedSeconds},
                   {"predicted_s", r.predictedSeconds},
                   {"error", r.error()},
                   {"fitted", c}});
    }
    return a;
  };
  j["rows"] = rowsJson(heldOut, params);
  Summary s = summarize(heldOut);
  j["mean_abs_error"] = s.mean;
  j["max_abs_error"] = s.max;
  j["winner_right"] = winnerRight;
  j["rows_total"] = rowsTotal;
  Summary in = summarize(inSample);
  j["in_sample"] = {
      {"rows", rowsJson(inSample, params)}, {"mean_abs_error", in.mean}, {"max_abs_error", in.max}};
  return j;
}

std::string CrossvalResult::table() const {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-16s %-16s %10s %10s %9s %10s %9s\n", "row", "strategy",
                "published", "held-out", "error", "in-sample", "error");
  out += line;
  for (size_t i = 0; i < heldOut.size(); ++i) {
    const auto& h = heldOut[i];
    const PredictedRow* in = nullptr;
    for (const auto& r : inSample)
      if (r.scenario == h.scenario && r.strategy == h.strategy) in = &r;
    std::snprintf(line, sizeof line, "%-16s %-16s %9.3fs %9.3fs %+8.1f%% %9.3fs %+8.1f%%\n",
                  h.scenario.c_str(), h.strategy.c_str(), h.publishedSeconds, h.predictedSeconds,
                  100 * h.error(), in ? in->predictedSeconds : 0, in ? 100 * in->error() : 0);
    out += line;
  }
  Summary s = summarize(heldOut), in = summarize(inSample);
  for (const auto& [k, v] : s.mean) {
    std::snprintf(line, sizeof line,
                  "%-10s held-out mean |error| %5.1f %%, max %5.1f %%; in-sample mean %5.1f %%, "
                  "max %5.1f %%\n",
                  k.c_str(), 100 * v, 100 * s.max[k], 100 * in.mean[k], 100 * in.max[k]);
    out += line;
  }
  std::snprintf(line, sizeof line, "winner right (held out): %d of %d\n", winnerRight, rowsTotal);
  return out + line;
}

}  // namespace tide::harness
