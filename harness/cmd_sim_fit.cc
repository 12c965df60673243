// `tide sim calibrate` and `tide sim crossval`: fit at most three free
// constants of a cost profile on declared published rows, and the
// leave-one-out error of doing so (harness/sim/crossval.h).

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "harness/command.h"
#include "harness/run_context.h"
#include "harness/sim/crossval.h"
#include "sim/profile_writer.h"
#include "sim/report.h"

namespace tide::harness {
namespace {

struct FitOptions {
  std::string profile = "miles";
  std::vector<std::string> scenarios{"scenarios/kimi-k2-miles.toml", "scenarios/published"};
  std::vector<std::string> free, fit;
  int grid = 5;
  std::string out, json;
};

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
  return s;
}

struct Loaded {
  CalibrationSet set;
  std::vector<sim::FitParam> params;
  sim::ResponseGrid grid;
};

Loaded loadAndSample(const FitOptions& o) {
  sim::CostProfile profile = orThrow(sim::loadProfile(o.profile));
  CalibrationSet set = orThrow(CalibrationSet::load(o.scenarios, profile));
  std::vector<sim::FitParam> params = orThrow(set.freeParams(o.free));
  std::printf("profile %s; %zu rows of %zu scenarios; free:", profile.name.c_str(),
              set.rows().size(), set.scenarios().size());
  for (const auto& p : params) std::printf(" %s [%.4g, %.4g] s", p.key.c_str(), p.low, p.high);
  std::printf("; grid %d per constant\n", o.grid);
  auto progress = [](size_t done, size_t total) {
    std::fprintf(stderr, "  sampled %zu of %zu grid points\n", done, total);
  };
  sim::ResponseGrid grid = orThrow(set.sample(params, o.grid, progress));
  return {std::move(set), std::move(params), std::move(grid)};
}

void addCommonOptions(CLI::App* cmd, FitOptions& o) {
  cmd->add_option("--profile", o.profile, "cost profile: a shipped name or a file")
      ->capture_default_str();
  cmd->add_option("--scenarios", o.scenarios,
                  "scenario files or folders (every *.toml); rows = their [published] figures")
      ->capture_default_str();
  cmd->add_option("--free", o.free, "1 to 3 profile constants to fit, e.g. host_op,engine_call")
      ->delimiter(',')
      ->required();
  cmd->add_option("--grid", o.grid, "grid points per free constant over its [low, high] range")
      ->capture_default_str();
}

void runCalibrate(const FitOptions& o) {
  Loaded l = loadAndSample(o);
  CalibrateResult r = orThrow(calibrate(l.set, l.grid, o.fit));
  std::string command = "tide sim calibrate --profile " + o.profile + " --fit " + joined(o.fit) +
                        " --free " + joined(o.free) + " --grid " + std::to_string(o.grid);
  for (size_t d = 0; d < l.params.size(); ++d)
    std::printf("%s = %.6g s\n", l.params[d].key.c_str(), r.fit.constants[d]);
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : r.rows) {
    std::printf("  %-16s %-16s published %8.3f s, simulated %8.3f s, residual %+6.1f %%\n",
                row.scenario.c_str(), row.strategy.c_str(), row.publishedSeconds,
                row.predictedSeconds, 100 * row.error());
    rows.push_back({{"name", row.scenario},
                    {"strategy", row.strategy},
                    {"published_s", row.publishedSeconds},
                    {"predicted_s", row.predictedSeconds},
                    {"error", row.error()}});
  }
  sim::CostProfile p = fittedProfile(l.set, l.params, r, command);
  std::ofstream out(o.out);
  if (!out) throw StatusError(TIDE_ERROR(Code::kInvalidArgument, "cannot write " + o.out));
  out << sim::profileToToml(p);
  if (!out.flush()) throw StatusError(TIDE_ERROR(Code::kInternal, "cannot write " + o.out));
  std::printf("profile -> %s\n", o.out.c_str());
  if (!o.json.empty()) {
    nlohmann::json j;
    j["schema"] = "tide.sim.calibrate/1";
    j["command"] = command;
    j["rows"] = rows;
    j["mean_abs_log_error"] = r.fit.meanAbsLogError;
    for (size_t d = 0; d < l.params.size(); ++d)
      j["constants"][l.params[d].key + "_s"] = r.fit.constants[d];
    j["context"] = runContext();
    orThrow(sim::writeJsonFile(o.json, j));
  }
}

void runCrossval(const FitOptions& o) {
  Loaded l = loadAndSample(o);
  CrossvalResult r = orThrow(crossvalidate(l.set, l.grid));
  std::printf("%s", r.table().c_str());
  if (!o.json.empty()) {
    nlohmann::json j = r.toJson();
    j["command"] = "tide sim crossval --profile " + o.profile + " --scenarios " +
                   joined(o.scenarios) + " --free " + joined(o.free) + " --grid " +
                   std::to_string(o.grid);
    j["context"] = runContext();
    orThrow(sim::writeJsonFile(o.json, j));
  }
}

}  // namespace

void addSimFitCommands(CLI::App& sim) {
  auto o = std::make_shared<FitOptions>();
  auto* cal = sim.add_subcommand(
      "calibrate", "Fit 1-3 cost-profile constants on declared published rows; write the profile");
  addCommonOptions(cal, *o);
  cal->add_option("--fit", o->fit, "rows to fit on: scenario names or scenario/strategy")
      ->delimiter(',')
      ->required();
  cal->add_option("--out", o->out, "write the fitted profile (TOML) here")->required();
  cal->add_option("--json", o->json, "write the fit and its residuals as JSON");
  cal->callback([o] { runCalibrate(*o); });

  auto c = std::make_shared<FitOptions>();
  auto* cv = sim.add_subcommand(
      "crossval", "Leave-one-out error of fitting profile constants on the published rows");
  addCommonOptions(cv, *c);
  cv->add_option("--json", c->json, "write tide.sim.crossval/1 JSON");
  cv->callback([c] { runCrossval(*c); });
}

}  // namespace tide::harness
