// `tide sim rl`: synchronous vs fully-async RL with the weight-sync time from
// the simulator and rollout lengths from the workloads rollout model.

#include <cstdio>
#include <memory>
#include <string>

#include "engine/core/status.h"
#include "harness/command.h"
#include "harness/run_context.h"
#include "harness/sim/scenario_plans.h"
#include "sim/report.h"
#include "sim/rl_pipeline.h"
#include "sim/scenario.h"
#include "sim/simulator.h"

namespace tide::harness {

void addSimRlCommand(CLI::App& sim) {
  struct Opts {
    std::string scenario, strategy = "miles-p2p", mode = "both", json;
    int staleness = 1, steps = 20, samples = 512, concurrent = 128;
    double trainTps = 2e5, decodeTps = 40;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = sim.add_subcommand("rl", "Simulate RL steps: sync vs fully-async");
  cmd->add_option("--scenario", o->scenario, "scenario TOML (sync time comes from it)")->required();
  cmd->add_option("--strategy", o->strategy, "weight-sync strategy")->capture_default_str();
  cmd->add_option("--mode", o->mode, "sync, async or both")
      ->check(CLI::IsMember({"sync", "async", "both"}))
      ->capture_default_str();
  cmd->add_option("--staleness", o->staleness, "K for async")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  cmd->add_option("--steps", o->steps, "RL steps")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--samples", o->samples, "samples per step")
      ->check(CLI::Range(1, 10000000))
      ->capture_default_str();
  cmd->add_option("--concurrent", o->concurrent,
                  "concurrent decode sequences (whole inference side)")
      ->check(CLI::Range(1, 100000000))
      ->capture_default_str();
  cmd->add_option("--decode-tps", o->decodeTps, "decode tokens/s per sequence")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--train-tps", o->trainTps, "training tokens/s (whole trainer)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--json", o->json, "write JSON");
  cmd->callback([o] {
    sim::Scenario sc = orThrow(loadCheckedScenario(o->scenario, o->strategy));
    sim::StrategyResult sync = orThrow(simulateStrategy(sc, o->strategy));
    sim::RlConfig cfg;
    cfg.steps = o->steps;
    cfg.rollout.samplesPerStep = o->samples;
    cfg.rollout.maxConcurrent = o->concurrent;
    cfg.rollout.decodeTokensPerSec = o->decodeTps;
    cfg.trainTokensPerSecond = o->trainTps;
    cfg.syncSeconds = sync.seconds;
    nlohmann::json out = {{"schema", "tide.sim.rl/1"},
                          {"scenario", sc.name},
                          {"strategy", o->strategy},
                          {"sync_seconds", sync.seconds},
                          {"runs", nlohmann::json::array()}};
    std::printf("weight sync (%s): %.3f s\n", o->strategy.c_str(), sync.seconds);
    std::printf("%-6s %3s %10s %12s %10s %10s %8s %8s  staleness histogram\n", "mode", "K",
                "samples/s", "makespan_s", "gen_s", "train_s", "inf_idle", "trn_idle");
    for (bool async : {false, true}) {
      if ((async && o->mode == "sync") || (!async && o->mode == "async")) continue;
      cfg.async = async;
      cfg.staleness = async ? o->staleness : 0;
      sim::RlResult r = sim::simulateRl(cfg);
      std::string hist;
      for (size_t i = 0; i < r.stalenessHistogram.size(); ++i) {
        hist += (i ? " " : "") + std::to_string(i) + ":" + std::to_string(r.stalenessHistogram[i]);
      }
      std::printf("%-6s %3d %10.2f %12.2f %10.2f %10.2f %8.3f %8.3f  %s\n", r.mode.c_str(),
                  r.staleness, r.samplesPerSecond, r.makespan, r.meanGenSeconds, r.meanTrainSeconds,
                  r.inferenceIdle, r.trainerIdle, hist.c_str());
      out["runs"].push_back(r.toJson());
    }
    out["context"] = runContext();
    if (!o->json.empty()) orThrow(sim::writeJsonFile(o->json, out));
  });
}

}  // namespace tide::harness
