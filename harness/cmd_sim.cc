// `tide sim`: the cluster simulator. `tide sim --scenario F.toml` predicts one
// weight update per strategy; `tide sim --plan P.json --cluster C` predicts a
// recorded plan (tide plan --json) on a cluster spec, as `tide validate` does
// beside a real run; `sim sweep` and `sim rl` are in their own files.

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "engine/core/status.h"
#include "engine/core/units.h"
#include "harness/command.h"
#include "harness/output_path.h"
#include "harness/run_context.h"
#include "harness/sim/plan_prediction.h"
#include "harness/sim/scenario_plans.h"
#include "harness/timeline.h"
#include "sim/report.h"
#include "sim/scenario.h"
#include "sim/simulator.h"
#include "traces/event_writer.h"

namespace tide::harness {

// Defined in cmd_sim_sweep.cc and cmd_sim_rl.cc.
void addSimSweepCommand(CLI::App& sim);
void addSimRlCommand(CLI::App& sim);
void addSimFitCommands(CLI::App& sim);  // cmd_sim_fit.cc
// Defined in cmd_sim_compare.cc.
void addSimCompareCommand(CLI::App& sim);

namespace {

traces::EventPath eventPath(sim::TaskPath p) {
  switch (p) {
    case sim::TaskPath::kCompute:
      return traces::EventPath::kCompute;
    case sim::TaskPath::kNvlink:
      return traces::EventPath::kNvlink;
    case sim::TaskPath::kRdma:
      return traces::EventPath::kRdma;
    case sim::TaskPath::kNccl:
      return traces::EventPath::kNccl;
    case sim::TaskPath::kPcieH2D:
      return traces::EventPath::kPcieH2D;
    case sim::TaskPath::kPcieD2H:
      return traces::EventPath::kPcieD2H;
    case sim::TaskPath::kHostMem:
      return traces::EventPath::kHostMem;
    case sim::TaskPath::kDisk:
      return traces::EventPath::kDisk;
  }
  return traces::EventPath::kUnknown;
}

// Events go through the traces layer (the only HDF5 code). With several
// strategies each gets its own file: F.h5 -> F.<strategy>.h5.
Status writeSimEvents(const std::string& path, const std::vector<sim::StrategyResult>& results) {
  for (const auto& r : results) {
    std::string file = path;
    if (results.size() > 1) {
      auto dot = file.rfind('.');
      std::string ext = dot == std::string::npos ? "" : file.substr(dot);
      file = file.substr(0, dot == std::string::npos ? file.size() : dot) + "." + r.strategy + ext;
    }
    std::error_code ec;
    std::filesystem::remove(file, ec);  // a fresh trace, not an append to an old one
    TIDE_ASSIGN_OR_RETURN(auto w, traces::EventWriter::open(file, 1 << 16));
    for (const auto& e : r.events) {
      traces::Event ev;
      ev.tStart = e.tStart;
      ev.tEnd = e.tEnd;
      ev.src = e.src;
      ev.dst = e.dst;
      ev.bytes = static_cast<uint64_t>(e.bytes);
      ev.stage = e.stage;
      ev.step = 0;
      ev.path = eventPath(e.path);
      TIDE_RETURN_IF_ERROR(w->append(ev));
    }
    TIDE_RETURN_IF_ERROR(w->flush());
    std::printf("events: %zu -> %s\n", r.events.size(), file.c_str());
  }
  return Status::ok();
}

struct SimOptions {
  std::string scenario;
  std::string strategy;
  std::string json;
  std::string events;
  // --plan mode
  std::string plan;
  std::string cluster;
  std::string hostTcp = "probe";
  std::string hostConvert = "probe";
  std::string traceOut;
};

// A recorded plan on a cluster spec: the prediction `tide validate` makes
// beside a real run of that plan, without the run.
void runPlanSim(const SimOptions& o) {
  if (!o.scenario.empty() || !o.strategy.empty()) {
    throw StatusError(TIDE_ERROR(Code::kInvalidArgument,
                                 "--plan simulates the plan's own strategy on --cluster; drop "
                                 "--scenario and --strategy"));
  }
  if (o.cluster.empty())
    throw StatusError(TIDE_ERROR(Code::kInvalidArgument, "--plan needs --cluster"));
  if (!o.traceOut.empty()) orThrow(checkOutputPath("--trace-out", o.traceOut));
  plan::TransferPlan p = orThrow(plan::TransferPlan::load(o.plan));
  PlanPrediction pred = orThrow(predictPlan(p, o.cluster, o.hostTcp, o.hostConvert));
  std::printf("%s", pred.hostLines().c_str());
  const sim::StrategyResult& r = pred.result;
  std::printf("plan %s on %s: simulated %.4f s (lower bound %.4f s on %s)\n", p.strategy.c_str(),
              o.cluster.c_str(), r.seconds, r.lowerBoundSeconds, r.bottleneck.c_str());
  nlohmann::json out;
  out["schema"] = "tide.sim.report/1";
  out["plan"] = o.plan;
  out["inputs"] = pred.inputsJson();
  out["results"] = nlohmann::json::array({r.toJson()});
  if (!o.json.empty()) orThrow(sim::writeJsonFile(o.json, out));
  if (!o.events.empty()) orThrow(writeSimEvents(o.events, {r}));
  if (!o.traceOut.empty()) {
    const plan::Schedule sched = orThrow(plan::Schedule::build(p));
    traces::ChromeTrace t;
    addUnits(t, kSimProcess, "simulated (tide sim)", p, sched, sim::simulatedUnits(r));
    addOtherWork(t, kSimProcess, r);
    orThrow(t.write(o.traceOut));
    std::printf("timeline: %zu slices -> %s\n", t.sliceCount(), o.traceOut.c_str());
  }
}

void runSim(const SimOptions& o) {
  if (o.scenario.empty())
    throw StatusError(TIDE_ERROR(Code::kInvalidArgument, "--scenario is required"));
  sim::Scenario sc = orThrow(loadCheckedScenario(o.scenario, o.strategy));
  nlohmann::json out;
  out["schema"] = "tide.sim.report/1";
  out["scenario"] = sc.name;
  out["inputs"] = sim::scenarioInputsJson(sc);
  out["results"] = nlohmann::json::array();
  sim::printScenarioInputs(sc);
  std::vector<sim::StrategyResult> results;
  for (const auto& name : sc.strategy.names) {
    auto progress = [&name](uint64_t done, uint64_t total, double simSeconds) {
      std::fprintf(stderr, "  %s: %llu of %llu tasks done, %.3f s simulated\n", name.c_str(),
                   static_cast<unsigned long long>(done), static_cast<unsigned long long>(total),
                   simSeconds);
    };
    sim::StrategyResult r = orThrow(simulateStrategy(sc, name, progress));
    sim::printStrategyResult(r, sc);
    out["results"].push_back(r.toJson());
    results.push_back(std::move(r));
  }
  if (results.size() == 2) {
    double ratio = results[1].seconds > 0 ? results[0].seconds / results[1].seconds : 0;
    std::printf("ratio %s/%s: %.2fx\n", results[0].strategy.c_str(), results[1].strategy.c_str(),
                ratio);
    out["ratio"] = ratio;
  }
  out["context"] = runContext();
  if (!o.json.empty()) orThrow(sim::writeJsonFile(o.json, out));
  if (!o.events.empty()) orThrow(writeSimEvents(o.events, results));
}

}  // namespace

void addSimCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("sim", "Cluster simulator: predict a weight update at scale");
  auto o = std::make_shared<SimOptions>();
  cmd->add_option("--scenario", o->scenario, "scenario TOML (docs/formats/scenario.md)");
  cmd->add_option("--strategy", o->strategy,
                  "a strategy of `tide strategies` (default: the scenario's list)");
  cmd->add_option("--json", o->json, "write the report as JSON");
  cmd->add_option("--events", o->events, "write per-transfer events (HDF5 trace)");
  auto* planOpt = cmd->add_option(
      "--plan", o->plan, "instead of --scenario: a recorded plan (tide plan --json) on --cluster");
  cmd->add_option("--cluster", o->cluster, "with --plan: cluster spec (preset, file, emulated:...)")
      ->needs(planOpt);
  cmd->add_option("--trace-out", o->traceOut,
                  "with --plan: write the simulated units as a timeline (Chrome trace-event "
                  "JSON: Perfetto, chrome://tracing)")
      ->needs(planOpt);
  cmd->add_option("--host-tcp", o->hostTcp,
                  "with --plan on an emulated cluster: tcp rate between two ranks of one host "
                  "(RATE), 'probe' to measure it now on 127.0.0.1, or 'none' (unlimited)")
      ->capture_default_str()
      ->needs(planOpt);
  cmd->add_option("--host-convert", o->hostConvert,
                  "with --plan on an emulated cluster: one core's FP8 conversion rate for every "
                  "conversion (RATE), 'probe' to time the plan's own conversions now, or 'none' "
                  "(free)")
      ->capture_default_str()
      ->needs(planOpt);
  addSimSweepCommand(*cmd);
  addSimRlCommand(*cmd);
  addSimFitCommands(*cmd);
  addSimCompareCommand(*cmd);
  cmd->require_subcommand(0, 1);
  cmd->callback([cmd, o] {
    if (!cmd->get_subcommands().empty()) return;
    if (!o->plan.empty()) return runPlanSim(*o);
    runSim(*o);
  });
}

}  // namespace tide::harness
