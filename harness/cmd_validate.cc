// `tide validate`: the simulator against a real run of the same plan.

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "engine/core/errno_status.h"
#include "engine/core/status.h"
#include "engine/core/units.h"
#include "engine/plan/transfer_plan.h"
#include "harness/command.h"
#include "harness/flag_check.h"
#include "harness/output_path.h"
#include "harness/sim/plan_prediction.h"
#include "harness/validation/matrix_run.h"
#include "harness/validation/validation_run.h"
#include "sim/report.h"
#include "sim/validation.h"
#include "traces/chrome_trace.h"

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

struct Opts {
  std::string real, plan, cluster, json, hostTcp = "probe", hostConvert = "probe", traceOut;
  double threshold = 15;
  std::string matrix, traceDir, workDir, only;
  bool quick = false, keepPlans = false;
};

std::string selfExe() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw StatusError(TIDE_ERROR(Code::kInternal, "cannot find the tide binary"));
  return exe.string();
}

// `tide validate --matrix`: every row for real and simulated; fails when a
// row failed (a skipped row is reported, not failed).
void runMatrixCommand(const Opts& o) {
  for (const auto& [flag, v] : {std::pair<const char*, const std::string*>{"--real", &o.real},
                                {"--plan", &o.plan},
                                {"--cluster", &o.cluster},
                                {"--trace-out", &o.traceOut}}) {
    if (!v->empty())
      throw StatusError(TIDE_ERROR(
          Code::kInvalidArgument, std::string(flag) + " describes one run; --matrix runs its own"));
  }
  MatrixFile m = orThrow(loadMatrix(o.matrix));
  if (!o.json.empty()) orThrow(checkOutputPath("--json", o.json));
  MatrixOptions mo;
  mo.tide = selfExe();
  mo.quick = o.quick;
  mo.only = o.only;
  mo.keepPlans = o.keepPlans;
  mo.traceDir = o.traceDir;
  mo.workDir = o.workDir;
  std::error_code ec;
  if (mo.workDir.empty()) {
    char tmpl[] = "/tmp/tide-matrix-XXXXXX";
    if (!mkdtemp(tmpl)) throw StatusError(TIDE_ERRNO("cannot make a work directory"));
    mo.workDir = tmpl;
  } else if (std::filesystem::create_directories(mo.workDir, ec); ec) {
    throw StatusError(
        TIDE_ERROR(Code::kUnavailable, "--work-dir " + mo.workDir + ": " + ec.message()));
  }
  if (!mo.traceDir.empty() && (std::filesystem::create_directories(mo.traceDir, ec), ec)) {
    throw StatusError(
        TIDE_ERROR(Code::kUnavailable, "--trace-dir " + mo.traceDir + ": " + ec.message()));
  }
  // The host's figures, once, before the rows: labelled micro-benchmarks
  // on the same host, not constants fitted on the rows.
  HostFigures host = orThrow(measureHost(o.hostTcp, o.hostConvert));
  std::printf(
      "matrix %s: %zu rows%s; this host: tcp between ranks of a node %.3f GB/s (%s), FP8 "
      "conversion %.3f GB/s per core (%s), %d cores; work in %s\n",
      m.path.c_str(), m.rows.size(), o.quick ? " (the quick ones run)" : "", host.tcpBps / 1e9,
      host.tcpSource.c_str(), host.convertBps / 1e9, host.convertSource.c_str(), host.cores,
      mo.workDir.c_str());
  std::vector<MatrixResult> rows = runMatrix(m, mo, host);
  MatrixSummary s = summarize(rows);
  nlohmann::json j = matrixJson(m, rows, s, host);
  std::printf("%s", matrixMarkdown(j).c_str());
  if (!o.json.empty()) {
    orThrow(sim::writeJsonFile(o.json, j));
    std::printf("json: %s\n", o.json.c_str());
  }
  if (s.failed > 0) {
    throw StatusError(TIDE_ERROR(Code::kFailedPrecondition,
                                 std::to_string(s.failed) + " of " + std::to_string(s.total) +
                                     " rows failed (their logs are in " + mo.workDir + ")"));
  }
}

}  // namespace

void addValidateCommand(CLI::App& app) {
  auto o = std::make_shared<Opts>();
  auto* cmd =
      app.add_subcommand("validate", "Compare a real run with the simulator on the same plan");
  cmd->add_option("--real", o->real, "real run result (tide.sync/1 JSON)");
  cmd->add_option("--plan", o->plan, "the plan that run executed (tide.plan/2 JSON)");
  cmd->add_option("--matrix", o->matrix,
                  "run every row of a validation matrix (TOML, docs/formats/"
                  "validation-matrix.md) for real and simulated, instead of --real/--plan");
  cmd->add_flag("--quick", o->quick, "--matrix: only the rows marked quick");
  cmd->add_option("--only", o->only, "--matrix: only the rows whose name contains this");
  cmd->add_option("--trace-dir", o->traceDir,
                  "--matrix: a timeline per row (real and simulated units) in this directory");
  cmd->add_option("--work-dir", o->workDir,
                  "--matrix: where the rows' plans, results and logs go (default: a new "
                  "directory under /tmp)");
  cmd->add_flag("--keep-plans", o->keepPlans, "--matrix: keep each row's plan file");
  cmd->add_option("--cluster", o->cluster,
                  "cluster spec (preset, file or emulated:...); default: the run's \"cluster\"");
  cmd->add_option("--host-tcp", o->hostTcp,
                  "emulated clusters: tcp rate between two ranks of one host (RATE), 'probe' "
                  "to measure it now on 127.0.0.1, or 'none' to treat it as unlimited")
      ->capture_default_str();
  cmd->add_option("--host-convert", o->hostConvert,
                  "emulated clusters: one core's FP8 conversion rate for every conversion "
                  "(RATE), 'probe' to time the plan's own conversions now with the executor's "
                  "quantizer, or 'none' to treat conversions as free")
      ->capture_default_str();
  cmd->add_option("--threshold", o->threshold, "allowed mean |error| in percent")
      ->capture_default_str();
  cmd->add_option("--json", o->json, "write the comparison as JSON");
  cmd->add_option("--trace-out", o->traceOut,
                  "write the real and the simulated units side by side as a timeline (Chrome "
                  "trace-event JSON: Perfetto, chrome://tracing)");
  cmd->callback([o] {
    if (!o->matrix.empty()) return runMatrixCommand(*o);
    if (o->real.empty() || o->plan.empty())
      throw StatusError(
          TIDE_ERROR(Code::kInvalidArgument, "give --real and --plan (one run) or --matrix FILE"));
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
    const HostFigures host = orThrow(hostFiguresFor(clusterName, o->hostTcp, o->hostConvert));
    Result<ValidationRun> ran = validateRun(real, p, clusterName, host, o->threshold / 100);
    // A run that did not follow the schedule: the run's file is what is wrong.
    if (!ran.isOk() && ran.status().code() == Code::kDataLoss)
      throw StatusError(ran.status().withContext("--real " + o->real));
    ValidationRun run = orThrow(std::move(ran));
    const PlanPrediction& pred = run.prediction;
    std::printf("%s", pred.hostLines().c_str());
    const sim::StrategyResult& r = pred.result;
    const sim::Validation& v = run.steps;
    std::printf("validate %s on %s: simulated %.4f s (lower bound %.4f s on %s)\n",
                p.strategy.c_str(), clusterName.c_str(), r.seconds, r.lowerBoundSeconds,
                r.bottleneck.c_str());
    for (const auto& s : v.steps) {
      std::printf("  step %d: real %.4f s  sim %.4f s  error %+.1f %%\n", s.step, s.realSeconds,
                  s.simSeconds, s.error * 100);
    }
    if (const auto& units = run.units) {
      std::printf(
          "units: %zu pieces, |error| of their ends (share of the real update): median "
          "%.1f %%, p90 %.1f %%, worst %.1f %% (%s unit %u piece %u of rank %u, step %d: "
          "real %.4f s, sim %.4f s)\n",
          units->compared, units->median * 100, units->p90 * 100, units->worst * 100,
          units->worstKind.c_str(), units->worstUnit, units->worstPiece, units->worstRank,
          units->worstStep, units->worstRealEnd, units->worstSimEnd);
    } else {
      std::printf("units: not compared (%s)\n", run.unitsWhy.c_str());
    }
    std::printf("mean |error| %.1f %% (max %.1f %%), threshold %.0f %%: %s\n", v.meanAbsError * 100,
                v.maxAbsError * 100, o->threshold, v.pass ? "PASS" : "FAIL");
    if (!o->traceOut.empty()) {
      traces::ChromeTrace t = run.timeline(p);
      orThrow(t.write(o->traceOut));
      std::printf("timeline: %zu slices -> %s\n", t.sliceCount(), o->traceOut.c_str());
    }
    if (!o->json.empty()) orThrow(sim::writeJsonFile(o->json, run.toJson()));
    if (!v.pass) {
      throw StatusError(TIDE_ERROR(Code::kFailedPrecondition, "simulator error above threshold"));
    }
  });
}

}  // namespace tide::harness
