#include "harness/sim/calibration_set.h"

#include <algorithm>
#include <filesystem>

#include "engine/sync/strategy_registry.h"
#include "harness/sim/scenario_plans.h"
#include "sim/simulator.h"

namespace tide::harness {
namespace {

Result<std::vector<std::string>> scenarioFiles(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const auto& p : paths) {
    std::error_code ec;
    if (std::filesystem::is_directory(p, ec)) {
      std::vector<std::string> in;
      for (const auto& e : std::filesystem::directory_iterator(p, ec))
        if (e.path().extension() == ".toml") in.push_back(e.path().string());
      std::sort(in.begin(), in.end());
      files.insert(files.end(), in.begin(), in.end());
    } else if (std::filesystem::is_regular_file(p, ec)) {
      files.push_back(p);
    } else {
      return TIDE_ERROR(Code::kNotFound, "--scenarios: " + p + " is neither a file nor a folder");
    }
  }
  if (files.empty()) return TIDE_ERROR(Code::kInvalidArgument, "--scenarios: no scenario file");
  return files;
}

}  // namespace

Result<CalibrationSet> CalibrationSet::load(const std::vector<std::string>& paths,
                                            const sim::CostProfile& profile) {
  TIDE_ASSIGN_OR_RETURN(std::vector<std::string> files, scenarioFiles(paths));
  CalibrationSet set;
  set.profile_ = profile;
  for (const auto& f : files) {
    TIDE_ASSIGN_OR_RETURN(sim::Scenario sc, loadCheckedScenario(f));
    // Every row is priced by the one profile, but what a scenario sets
    // itself ([calibration], [strategy] lock_poll_ms) still holds, as under
    // sim::withProfile; a free constant is set by the fit either way.
    const sim::Calibration own = sc.calib;
    sc.profile = profile;
    sc.profileName = profile.name;
    sc.calib = profile.calib;
    for (const auto& key : sc.overriddenKeys)
      (void)sim::setCalibrationSeconds(sc.calib, key, sim::calibrationSeconds(own, key));
    std::vector<CalibrationRow> rows;
    for (const auto& name : sc.strategy.names) {
      auto pub = std::find_if(sc.published.begin(), sc.published.end(),
                              [&](const auto& p) { return p.strategy == name && p.primary(); });
      if (pub == sc.published.end()) continue;
      TIDE_ASSIGN_OR_RETURN(const sync::StrategyDescriptor* d, sync::findStrategy(name));
      CalibrationRow row;
      row.scenario = sc.name;
      row.strategy = name;
      row.publishedSeconds = pub->seconds;
      row.scenarioIndex = set.scenarios_.size();
      TIDE_ASSIGN_OR_RETURN(row.plan, scenarioPlan(sc, *d));
      rows.push_back(std::move(row));
    }
    if (rows.empty()) continue;  // nothing published to fit or predict
    for (auto& r : rows) set.rows_.push_back(std::move(r));
    set.scenarios_.push_back(std::move(sc));
  }
  if (set.rows_.empty())
    return TIDE_ERROR(Code::kInvalidArgument,
                      "--scenarios: no scenario has a [published] figure for a strategy it runs");
  return set;
}

std::vector<double> CalibrationSet::published() const {
  std::vector<double> v;
  for (const auto& r : rows_) v.push_back(r.publishedSeconds);
  return v;
}

Result<std::vector<sim::FitParam>> CalibrationSet::freeParams(
    const std::vector<std::string>& keys) const {
  if (keys.empty() || keys.size() > 3)
    return TIDE_ERROR(Code::kInvalidArgument, "--free takes 1 to 3 constants of the profile");
  std::vector<sim::FitParam> out;
  for (const auto& k : keys) {
    const sim::CostConstant* c = profile_.find(k);
    if (!c)
      return TIDE_ERROR(Code::kInvalidArgument, "--free: profile has no constant '" + k + "'");
    if (!c->hasRange() || !(c->highSeconds > c->lowSeconds))
      return TIDE_ERROR(Code::kInvalidArgument, "--free: constant '" + k + "' of profile '" +
                                                    profile_.name +
                                                    "' gives no range (low < high) to fit it in");
    for (const auto& p : out)
      if (p.key == k) return TIDE_ERROR(Code::kInvalidArgument, "--free: '" + k + "' twice");
    out.push_back({k, c->lowSeconds, c->highSeconds});
  }
  return out;
}

Result<double> CalibrationSet::predict(size_t r, const std::vector<sim::FitParam>& params,
                                       const std::vector<double>& x) const {
  const CalibrationRow& row = rows_.at(r);
  sim::Scenario sc = scenarios_[row.scenarioIndex];
  for (size_t d = 0; d < params.size(); ++d)
    (void)sim::setCalibrationSeconds(sc.calib, params[d].key, x[d]);
  TIDE_ASSIGN_OR_RETURN(sim::StrategyResult res, sim::simulateScenario(sc, row.plan));
  return res.seconds;
}

Result<sim::ResponseGrid> CalibrationSet::sample(
    const std::vector<sim::FitParam>& params, int pointsPerDim,
    const std::function<void(size_t, size_t)>& progress) const {
  if (pointsPerDim < 2 || pointsPerDim > 33)
    return TIDE_ERROR(Code::kInvalidArgument, "--grid must be 2 to 33 points per constant");
  sim::ResponseGrid g(params, pointsPerDim, rows_.size());
  for (size_t i = 0; i < g.points(); ++i) {
    std::vector<double> x = g.point(i);
    for (size_t r = 0; r < rows_.size(); ++r) {
      TIDE_ASSIGN_OR_RETURN(double s, predict(r, params, x));
      g.set(r, i, s);
    }
    if (progress) progress(i + 1, g.points());
  }
  return g;
}

}  // namespace tide::harness
