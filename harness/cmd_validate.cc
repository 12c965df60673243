// `tide validate`: the simulator against a real run of the same plan.

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "engine/core/status.h"
#include "engine/core/units.h"
#include "engine/plan/transfer_plan.h"
#include "harness/command.h"
#include "sim/plan_lowering.h"
#include "sim/report.h"
#include "sim/validation.h"
#include "workloads/cluster.h"

namespace tide::harness {

namespace {

nlohmann::json readJson(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw StatusError(TIDE_ERROR(Code::kNotFound, "cannot open " + path));
  try {
    return nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw StatusError(TIDE_ERROR(Code::kInvalidArgument, path + ": bad JSON: " + e.what()));
  }
}

}  // namespace

void addValidateCommand(CLI::App& app) {
  struct Opts {
    std::string real, plan, cluster, json, chunk = "1MiB";
    double threshold = 15;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd =
      app.add_subcommand("validate", "Compare a real run with the simulator on the same plan");
  cmd->add_option("--real", o->real, "real run result (tide.sync/1 JSON)")->required();
  cmd->add_option("--plan", o->plan, "the plan that run executed (tide.plan/1 JSON)")->required();
  cmd->add_option("--cluster", o->cluster,
                  "cluster spec (preset, file or emulated:...); default: the run's \"cluster\"");
  cmd->add_option("--chunk", o->chunk,
                  "broadcast chunk the run used (tide sync --chunk; the plan does not say)")
      ->capture_default_str();
  cmd->add_option("--threshold", o->threshold, "allowed mean |error| in percent")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--json", o->json, "write the comparison as JSON");
  cmd->callback([o] {
    nlohmann::json real = readJson(o->real);
    plan::TransferPlan p = orThrow(plan::TransferPlan::fromJson(readJson(o->plan)));
    std::string clusterName = o->cluster;
    if (clusterName.empty() && real.contains("cluster") && real["cluster"].is_string())
      clusterName = real["cluster"].get<std::string>();
    if (clusterName.empty())
      throw StatusError(TIDE_ERROR(Code::kInvalidArgument, "no --cluster and the run names none"));
    workloads::ClusterSpec cluster = orThrow(workloads::loadCluster(clusterName));
    uint64_t chunk = orThrow(parseSize(o->chunk));
    sim::StrategyResult r =
        orThrow(sim::simulatePlan(p, cluster, sim::Calibration{}, static_cast<double>(chunk)));
    sim::Validation v = orThrow(sim::compareWithReal(
        real, r.seconds, static_cast<double>(p.summarize().totalBytes), o->threshold / 100));
    std::printf("validate %s on %s: simulated %.4f s (lower bound %.4f s on %s)\n",
                p.strategy.c_str(), clusterName.c_str(), r.seconds, r.lowerBoundSeconds,
                r.bottleneck.c_str());
    for (const auto& s : v.steps) {
      std::printf("  step %d: real %.4f s  sim %.4f s  error %+.1f %%\n", s.step, s.realSeconds,
                  s.simSeconds, s.error * 100);
    }
    std::printf("mean |error| %.1f %% (max %.1f %%), threshold %.0f %%: %s\n", v.meanAbsError * 100,
                v.maxAbsError * 100, o->threshold, v.pass ? "PASS" : "FAIL");
    if (!o->json.empty()) {
      auto j = v.toJson();
      // What the prediction was made on, so a recorded result can be rerun.
      j["cluster"] = clusterName;
      j["chunk_bytes"] = chunk;
      j["plan_bytes"] = p.summarize().totalBytes;
      j["sim_lower_bound_seconds"] = r.lowerBoundSeconds;
      j["sim_bottleneck"] = r.bottleneck;
      orThrow(sim::writeJsonFile(o->json, j));
    }
    if (!v.pass) {
      throw StatusError(TIDE_ERROR(Code::kFailedPrecondition, "simulator error above threshold"));
    }
  });
}

}  // namespace tide::harness
