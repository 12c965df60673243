// `tide validate`: the simulator against a real run of the same plan.

#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "engine/core/status.h"
#include "engine/core/units.h"
#include "engine/plan/transfer_plan.h"
#include "harness/command.h"
#include "harness/flag_check.h"
#include "harness/sim/plan_prediction.h"
#include "sim/report.h"
#include "sim/validation.h"

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
    std::string real, plan, cluster, json, chunk = "1MiB", hostTcp = "probe";
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
  cmd->add_option("--host-tcp", o->hostTcp,
                  "emulated clusters: tcp rate between two ranks of one host (RATE), 'probe' "
                  "to measure it now on 127.0.0.1, or 'none' to treat it as unlimited")
      ->capture_default_str();
  cmd->add_option("--threshold", o->threshold, "allowed mean |error| in percent")
      ->capture_default_str();
  cmd->add_option("--json", o->json, "write the comparison as JSON");
  cmd->callback([o] {
    if (!(o->threshold > 0) || !std::isfinite(o->threshold)) {
      throw flagError("--threshold", "> 0", o->threshold);
    }
    auto chunkSize = parseSize(o->chunk);
    if (!chunkSize.isOk()) throw StatusError(chunkSize.status().withContext("--chunk"));
    const uint64_t chunk = *chunkSize;
    if (chunk == 0) throw StatusError(TIDE_ERROR(Code::kInvalidArgument, "--chunk must be > 0"));
    nlohmann::json real = readJson(o->real);
    // Before the cluster: a file that is no sync result has no "cluster" either,
    // and "no --cluster" would hide the real problem.
    if (auto st = sim::checkSyncSchema(real); !st.isOk()) {
      throw StatusError(st.withContext("--real " + o->real));
    }
    plan::TransferPlan p = orThrow(plan::TransferPlan::fromJson(readJson(o->plan)));
    std::string clusterName = o->cluster;
    if (clusterName.empty() && real.contains("cluster") && real["cluster"].is_string())
      clusterName = real["cluster"].get<std::string>();
    if (clusterName.empty())
      throw StatusError(TIDE_ERROR(Code::kInvalidArgument, "no --cluster and the run names none"));
    PlanPrediction pred = orThrow(predictPlan(p, clusterName, chunk, o->hostTcp));
    if (pred.hostTcpSource != "none") {
      std::printf("host tcp between ranks of a node: %.3f GB/s (%s)\n", pred.hostTcpBps / 1e9,
                  pred.hostTcpSource.c_str());
    }
    const sim::StrategyResult& r = pred.result;
    sim::Validation v = orThrow(sim::compareWithReal(
        real, r.seconds, static_cast<double>(pred.planBytes), o->threshold / 100));
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
      j.update(pred.inputsJson());
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
