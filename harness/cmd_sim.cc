// `tide sim`: the cluster simulator. `tide sim --scenario F.toml` predicts one
// weight update per strategy; `sim sweep` and `sim rl` are in their own files.

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "engine/core/status.h"
#include "harness/command.h"
#include "harness/run_context.h"
#include "harness/sim/scenario_plans.h"
#include "sim/report.h"
#include "sim/scenario.h"
#include "sim/simulator.h"
#include "traces/event_writer.h"

namespace tide::harness {

// Defined in cmd_sim_sweep.cc and cmd_sim_rl.cc.
void addSimSweepCommand(CLI::App& sim);
void addSimRlCommand(CLI::App& sim);

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
};

void runSim(const SimOptions& o) {
  if (o.scenario.empty())
    throw StatusError(TIDE_ERROR(Code::kInvalidArgument, "--scenario is required"));
  sim::Scenario sc = orThrow(loadCheckedScenario(o.scenario));
  if (!o.strategy.empty()) {
    sc.strategy.names = {o.strategy};
    orThrow(checkScenarioStrategies(sc));
  }
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
  addSimSweepCommand(*cmd);
  addSimRlCommand(*cmd);
  cmd->require_subcommand(0, 1);
  cmd->callback([cmd, o] {
    if (cmd->get_subcommands().empty()) runSim(*o);
  });
}

}  // namespace tide::harness
