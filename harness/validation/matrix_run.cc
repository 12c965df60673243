#include "harness/validation/matrix_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "engine/core/clock.h"
#include "engine/exec/launch/emulated_cluster.h"
#include "engine/exec/launch/rxe_cluster.h"
#include "harness/reproduce/runner.h"
#include "harness/validation/validation_run.h"
#include "traces/chrome_trace.h"

namespace tide::harness {

namespace {

Result<nlohmann::json> readJson(const std::string& path) {
  std::ifstream in(path);
  if (!in) return TIDE_ERROR(Code::kNotFound, "no result " + path);
  try {
    return nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    return TIDE_ERROR(Code::kInvalidArgument, path + ": bad JSON: " + e.what());
  }
}

// One subprocess of a row; empty when it succeeded, else why not.
std::string runStep(const std::string& what, std::vector<std::string> argv, int timeout,
                    const std::string& log, bool* skipped) {
  reproduce::Part p;
  p.name = what;
  p.argv = std::move(argv);
  p.timeoutSeconds = timeout;
  reproduce::PartResult r = reproduce::runPart(p, log);
  if (r.status == "ok") return "";
  *skipped = r.status == "skipped";
  return what + ": " + r.reason + " (log " + log + ")";
}

std::string fileName(const MatrixRow& r) {
  std::string n = r.name();
  std::replace(n.begin(), n.end(), '/', '_');
  return n;
}

void runRow(MatrixResult& out, const MatrixOptions& o, const HostFigures& host) {
  const MatrixRow& r = out.row;
  const std::string base = o.workDir + "/" + fileName(r);
  const std::string planPath = base + ".plan.json", realPath = base + ".real.json";
  bool skipped = false;
  std::vector<std::string> plan{o.tide, "plan"};
  for (auto& a : r.planArgs()) plan.push_back(std::move(a));
  plan.insert(plan.end(), {"--json", planPath});
  out.reason = runStep("tide plan", plan, 600, base + ".plan.log", &skipped);
  if (out.reason.empty()) {
    std::vector<std::string> sync{
        o.tide,    "sync",      "--plan",  planPath,  "--cluster",
        r.cluster, "--backend", r.backend, "--steps", std::to_string(r.steps),
        "--json",  realPath};
    if (r.streams > 0) sync.insert(sync.end(), {"--streams", std::to_string(r.streams)});
    out.reason = runStep("tide sync", sync, r.timeoutSeconds, base + ".sync.log", &skipped);
  }
  if (!out.reason.empty()) {
    out.status = skipped ? "skipped" : "failed";
    return;
  }
  auto fail = [&](const Status& s) {
    out.status = "failed";
    out.reason = s.message();
  };
  auto real = readJson(realPath);
  if (!real.isOk()) return fail(real.status());
  auto p = plan::TransferPlan::load(planPath);
  if (!p.isOk()) return fail(p.status());
  auto v = validateRun(*real, *p, r.cluster, host, /*threshold=*/1.0);
  if (!v.isOk()) return fail(v.status());
  out.status = "ok";
  out.reason.clear();
  for (const auto& s : v->steps.steps) out.realSteps.push_back(s.realSeconds);
  out.realSeconds = v->realMedianSeconds;
  out.simSeconds = v->prediction.result.seconds;
  out.error = v->medianError;
  out.boundSeconds = v->prediction.result.lowerBoundSeconds;
  out.bottleneck = v->prediction.result.bottleneck;
  out.planBytes = v->prediction.planBytes;
  out.convertUnitsBps = v->prediction.convertUnitsBps;
  out.units = v->units;
  if (!o.traceDir.empty()) {
    traces::ChromeTrace t = v->timeline(*p);
    if (Status s = t.write(o.traceDir + "/" + fileName(r) + ".json"); !s.isOk()) return fail(s);
  }
  if (!o.keepPlans) std::filesystem::remove(planPath);
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  // Nearest rank: the smallest value with at least q of the values at or below it.
  size_t k = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(k, 1, v.size()) - 1];
}

}  // namespace

std::vector<MatrixResult> runMatrix(const MatrixFile& m, const MatrixOptions& o,
                                    const HostFigures& host) {
  const std::string noNetAdmin = exec::netAdminMissing();
  const std::string noRxe = noNetAdmin.empty() ? exec::rxeClusterMissing() : noNetAdmin;
  std::vector<MatrixResult> rows;
  for (const auto& r : m.rows) {
    if (o.quick && !r.quick) continue;
    if (!o.only.empty() && r.name().find(o.only) == std::string::npos) continue;
    rows.push_back({r});
  }
  Stopwatch all;
  size_t i = 0;
  for (auto& out : rows) {
    ++i;
    Stopwatch sw;
    const std::string& missing = out.row.backend == "rdma" ? noRxe : noNetAdmin;
    if (!missing.empty()) {
      out.status = "skipped";
      out.reason = missing;
    } else {
      runRow(out, o, host);
    }
    out.wallSeconds = sw.seconds();
    if (out.status == "ok") {
      std::printf("[%zu/%zu] %-40s real %8.3f s  sim %8.3f s  error %+6.1f %%  (%.0f s)\n", i,
                  rows.size(), out.row.name().c_str(), out.realSeconds, out.simSeconds,
                  out.error * 100, out.wallSeconds);
    } else {
      std::printf("[%zu/%zu] %-40s %s: %s\n", i, rows.size(), out.row.name().c_str(),
                  out.status.c_str(), out.reason.c_str());
    }
    std::fflush(stdout);
  }
  std::printf("matrix: %zu rows in %.0f s\n", rows.size(), all.seconds());
  return rows;
}

MatrixSummary summarize(const std::vector<MatrixResult>& rows) {
  MatrixSummary s;
  s.total = rows.size();
  std::vector<double> errs;
  // (config, backend) -> the strategies' (real, sim) seconds.
  std::map<std::pair<std::string, std::string>, std::vector<const MatrixResult*>> groups;
  for (const auto& r : rows) {
    if (r.status == "ok") {
      ++s.ok;
      errs.push_back(std::abs(r.error));
      groups[{r.row.config, r.row.backend}].push_back(&r);
    } else if (r.status == "skipped") {
      ++s.skipped;
    } else {
      ++s.failed;
    }
  }
  s.median = percentile(errs, 0.5);
  s.p90 = percentile(errs, 0.9);
  s.max = errs.empty() ? 0 : *std::max_element(errs.begin(), errs.end());
  for (const auto& [key, g] : groups) {
    if (g.size() < 2) continue;
    auto byReal = g, bySim = g;
    std::sort(byReal.begin(), byReal.end(),
              [](auto* a, auto* b) { return a->realSeconds < b->realSeconds; });
    std::sort(bySim.begin(), bySim.end(),
              [](auto* a, auto* b) { return a->simSeconds < b->simSeconds; });
    if (byReal[1]->realSeconds <= 1.10 * byReal[0]->realSeconds) continue;
    ++s.winnerChecks;
    if (bySim[0] != byReal[0]) s.wrongWinner.push_back(key.first + "/" + key.second);
  }
  return s;
}

nlohmann::json matrixJson(const MatrixFile& m, const std::vector<MatrixResult>& rows,
                          const MatrixSummary& s, const HostFigures& host) {
  nlohmann::json out;
  out["schema"] = "tide.validate.matrix/1";
  out["matrix"] = m.path;
  out["rows"] = nlohmann::json::array();
  for (const auto& r : rows) {
    nlohmann::json j{
        {"name", r.row.name()},       {"config", r.row.config},   {"varies", r.row.varies},
        {"strategy", r.row.strategy}, {"backend", r.row.backend}, {"cluster", r.row.cluster},
        {"status", r.status},         {"wall_s", r.wallSeconds},  {"quick", r.row.quick}};
    if (r.status == "ok") {
      j.update({{"real_s", r.realSeconds},
                {"real_steps_s", r.realSteps},
                // The fastest step: the one a loaded host slowed least.
                {"fastest_error",
                 r.simSeconds / *std::min_element(r.realSteps.begin(), r.realSteps.end()) - 1},
                {"sim_s", r.simSeconds},
                {"error", r.error},
                {"bound_s", r.boundSeconds},
                {"bottleneck", r.bottleneck},
                {"plan_bytes", r.planBytes}});
      if (r.convertUnitsBps > 0) j["convert_units_gbps"] = r.convertUnitsBps / 1e9;
      if (r.units) j["units"] = r.units->toJson();
    } else {
      j["reason"] = r.reason;
    }
    out["rows"].push_back(std::move(j));
  }
  out["rows_total"] = s.total;
  out["rows_ok"] = s.ok;
  out["rows_skipped"] = s.skipped;
  out["rows_failed"] = s.failed;
  out["median_abs_error"] = s.median;
  out["p90_abs_error"] = s.p90;
  out["max_abs_error"] = s.max;
  out["winner_checks"] = s.winnerChecks;
  out["wrong_winner"] = s.wrongWinner;
  // micro-benchmarks of this host, measured before the rows (or given):
  // one tcp stream between two threads (the simulator's intra-node tcp) and
  // one core's FP8 conversion, with the cores the ranks share (a row that
  // converts also times its own plan's conversions: convert_units_gbps).
  out["host_tcp_gbps"] = host.tcpBps / 1e9;
  out["host_tcp_source"] = host.tcpSource;
  out["host_convert_gbps"] = host.convertBps / 1e9;
  out["host_convert_source"] = host.convertSource;
  out["host_cores"] = host.cores;
  return out;
}

std::string matrixMarkdown(const nlohmann::json& j) {
  std::string md =
      "| row | varies | real (median step) | simulated | error | plan's bound | units: median / "
      "p90 / worst |\n|---|---|---:|---:|---:|---:|---|\n";
  for (const auto& r : j.value("rows", nlohmann::json::array())) {
    if (r.value("status", "") != "ok") {
      md += fmt::format("| {} | {} | {}: {} | | | | |\n", r.value("name", ""),
                        r.value("varies", ""), r.value("status", ""), r.value("reason", ""));
      continue;
    }
    std::string units = "—";
    if (r.contains("units")) {
      const auto& u = r["units"];
      const double worst = u.contains("worst") ? u["worst"].value("error", 0.0) : 0.0;
      units = fmt::format("{:.1f} / {:.1f} / {:.1f} %", u.value("median", 0.0) * 100,
                          u.value("p90", 0.0) * 100, worst * 100);
    }
    md += fmt::format("| {} | {} | {:.3f} s | {:.3f} s | {:+.1f} % | {:.3f} s | {} |\n",
                      r.value("name", ""), r.value("varies", ""), r.value("real_s", 0.0),
                      r.value("sim_s", 0.0), r.value("error", 0.0) * 100, r.value("bound_s", 0.0),
                      units);
  }
  const size_t checks = j.value("winner_checks", size_t{0});
  const size_t wrong = j.value("wrong_winner", nlohmann::json::array()).size();
  md += fmt::format(
      "\n{} rows ({} ran, {} skipped, {} failed): |error| median {:.1f} %, p90 {:.1f} %, max "
      "{:.1f} %; faster strategy (where the real runs differ by > 10 %): {} of {} agree.\n",
      j.value("rows_total", 0), j.value("rows_ok", 0), j.value("rows_skipped", 0),
      j.value("rows_failed", 0), j.value("median_abs_error", 0.0) * 100,
      j.value("p90_abs_error", 0.0) * 100, j.value("max_abs_error", 0.0) * 100, checks - wrong,
      checks);
  return md;
}

}  // namespace tide::harness
