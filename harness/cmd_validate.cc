// `tide validate`: the simulator against a real run of the same plan.

#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

#include "engine/core/status.h"
#include "engine/core/units.h"
#include "engine/plan/transfer_plan.h"
#include "harness/command.h"
#include "harness/flag_check.h"
#include "harness/output_path.h"
#include "harness/sim/plan_prediction.h"
#include "harness/timeline.h"
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
    std::string real, plan, cluster, json, hostTcp = "probe", traceOut;
    double threshold = 15;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd =
      app.add_subcommand("validate", "Compare a real run with the simulator on the same plan");
  cmd->add_option("--real", o->real, "real run result (tide.sync/1 JSON)")->required();
  cmd->add_option("--plan", o->plan, "the plan that run executed (tide.plan/2 JSON)")->required();
  cmd->add_option("--cluster", o->cluster,
                  "cluster spec (preset, file or emulated:...); default: the run's \"cluster\"");
  cmd->add_option("--host-tcp", o->hostTcp,
                  "emulated clusters: tcp rate between two ranks of one host (RATE), 'probe' "
                  "to measure it now on 127.0.0.1, or 'none' to treat it as unlimited")
      ->capture_default_str();
  cmd->add_option("--threshold", o->threshold, "allowed mean |error| in percent")
      ->capture_default_str();
  cmd->add_option("--json", o->json, "write the comparison as JSON");
  cmd->add_option("--trace-out", o->traceOut,
                  "write the real and the simulated units side by side as a timeline (Chrome "
                  "trace-event JSON: Perfetto, chrome://tracing)");
  cmd->callback([o] {
    if (!(o->threshold > 0) || !std::isfinite(o->threshold)) {
      throw flagError("--threshold", "> 0", o->threshold);
    }
    if (!o->traceOut.empty()) orThrow(checkOutputPath("--trace-out", o->traceOut));
    nlohmann::json real = readJson(o->real);
    // Before the cluster: a file that is no sync result has no "cluster" either,
    // and "no --cluster" would hide the real problem.
    if (auto st = sim::checkSyncSchema(real); !st.isOk()) {
      throw StatusError(st.withContext("--real " + o->real));
    }
    plan::TransferPlan p = orThrow(plan::TransferPlan::load(o->plan));
    std::string clusterName = o->cluster;
    if (clusterName.empty() && real.contains("cluster") && real["cluster"].is_string())
      clusterName = real["cluster"].get<std::string>();
    if (clusterName.empty())
      throw StatusError(TIDE_ERROR(Code::kInvalidArgument, "no --cluster and the run names none"));
    PlanPrediction pred = orThrow(predictPlan(p, clusterName, o->hostTcp));
    if (pred.hostTcpSource != "none") {
      std::printf("host tcp between ranks of a node: %.3f GB/s (%s)\n", pred.hostTcpBps / 1e9,
                  pred.hostTcpSource.c_str());
    }
    const sim::StrategyResult& r = pred.result;
    sim::Validation v = orThrow(sim::compareWithReal(
        real, r.seconds, static_cast<double>(pred.planBytes), o->threshold / 100));
    // Unit by unit, where the run recorded its units (full updates); a run
    // that did not follow the schedule is refused before anything is printed.
    const plan::Schedule sched = orThrow(plan::Schedule::build(p));
    std::optional<sim::UnitErrors> units;
    std::string unitsWhy = "the run recorded none";
    std::vector<sim::UnitTime> realUnits;
    if (real.contains("units")) {
      realUnits = orThrow(sim::unitTimesFromJson(real["units"]));
      auto cmp = sim::compareUnits(sched, realUnits, sim::simulatedUnits(r));
      if (cmp.isOk()) {
        units = *cmp;
      } else if (cmp.status().code() == Code::kInvalidArgument) {
        unitsWhy = cmp.status().message();
      } else {
        throw StatusError(cmp.status().withContext("--real " + o->real));
      }
    }
    std::printf("validate %s on %s: simulated %.4f s (lower bound %.4f s on %s)\n",
                p.strategy.c_str(), clusterName.c_str(), r.seconds, r.lowerBoundSeconds,
                r.bottleneck.c_str());
    for (const auto& s : v.steps) {
      std::printf("  step %d: real %.4f s  sim %.4f s  error %+.1f %%\n", s.step, s.realSeconds,
                  s.simSeconds, s.error * 100);
    }
    if (units) {
      std::printf(
          "units: %zu pieces, |error| of their ends (share of the real update): median "
          "%.1f %%, p90 %.1f %%, worst %.1f %% (%s unit %u piece %u of rank %u, step %d: "
          "real %.4f s, sim %.4f s)\n",
          units->compared, units->median * 100, units->p90 * 100, units->worst * 100,
          units->worstKind.c_str(), units->worstUnit, units->worstPiece, units->worstRank,
          units->worstStep, units->worstRealEnd, units->worstSimEnd);
    } else {
      std::printf("units: not compared (%s)\n", unitsWhy.c_str());
    }
    std::printf("mean |error| %.1f %% (max %.1f %%), threshold %.0f %%: %s\n", v.meanAbsError * 100,
                v.maxAbsError * 100, o->threshold, v.pass ? "PASS" : "FAIL");
    if (!o->traceOut.empty()) {
      traces::ChromeTrace t;
      addUnits(t, kRealProcess, "real (tide sync)", p, sched, realUnits);
      addUnits(t, kSimProcess, "simulated (tide sim)", p, sched, sim::simulatedUnits(r));
      addOtherWork(t, kSimProcess, r);
      orThrow(t.write(o->traceOut));
      std::printf("timeline: %zu slices -> %s\n", t.sliceCount(), o->traceOut.c_str());
    }
    if (!o->json.empty()) {
      auto j = v.toJson();
      if (units) j["units"] = units->toJson();
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
