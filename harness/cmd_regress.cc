// `tide regress check`: the regression gate a team runs in CI (and `make
// test` runs): instruction counts of the CPU-bound kernels under callgrind
// and the deterministic figures (simulator predictions, plan bytes and
// bounds), each against its baseline and tolerance in one budgets file
// (results/budgets/regressions.toml). Exit 1 lists every metric beyond its
// threshold with old and new value and the cause; --update rewrites the
// baselines instead. docs/regressions.md.

#include <fmt/format.h>
#include <gnu/libc-version.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "engine/core/clock.h"
#include "harness/command.h"
#include "harness/output_path.h"
#include "harness/regress/budgets.h"
#include "harness/regress/callgrind.h"
#include "harness/regress/figures.h"
#include "harness/regress/gate.h"
#include "harness/run_context.h"

namespace tide::harness {
namespace {

using namespace regress;

struct RegressArgs {
  std::string budgets = std::string(TIDE_SOURCE_DIR) + "/results/budgets/regressions.toml";
  std::string root = TIDE_SOURCE_DIR;
  std::string only;
  std::string json;
  std::string kernels;  // tide_kernels; default: bench/tide_kernels beside this binary
  std::string valgrind;
  std::string keep;
  bool update = false;
};

// A temporary directory removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string t = (std::filesystem::temp_directory_path() / "tide-regress-XXXXXX").string();
    if (::mkdtemp(t.data()) != nullptr) path_ = t;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string selfDir() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

std::string resolve(const std::string& root, const std::string& path) {
  return std::filesystem::path(path).is_absolute() ? path : root + "/" + path;
}

std::string value(const std::optional<double>& v, const std::string& unit) {
  if (!v) return "-";
  if (unit == "s") return fmt::format("{:.10g}", *v);  // enough digits to show a change
  return fmt::format("{:.0f}", *v);
}

Result<CallgrindRun> measureInstructions(const RegressArgs& a, const Budgets& b,
                                         const std::function<bool(const std::string&)>& sel,
                                         const std::string& workDir) {
  std::vector<std::string> kernels;
  for (const auto& k : b.kernels)
    if (sel("ir." + k)) kernels.push_back(k);
  if (!b.kernels.empty() && kernels.empty()) return CallgrindRun{};
  CallgrindOptions o;
  o.valgrind = a.valgrind.empty() ? findInPath("valgrind") : a.valgrind;
  if (o.valgrind.empty())
    return TIDE_ERROR(Code::kNotFound,
                      "valgrind not installed: instruction counts cannot be measured "
                      "(scripts/install-deps.sh installs it)");
  o.driver = a.kernels.empty() ? selfDir() + "/bench/tide_kernels" : a.kernels;
  if (::access(o.driver.c_str(), X_OK) != 0)
    return TIDE_ERROR(Code::kNotFound,
                      "kernel driver " + o.driver +
                          " not found (build the tide_kernels target, or pass --kernels)");
  o.kernels = kernels;
  o.workDir = workDir;
  return runCallgrind(o);
}

void printRows(const std::vector<GateRow>& rows) {
  std::printf("%-52s %20s %20s %9s %7s  %s\n", "metric", "baseline", "measured", "change", "limit",
              "verdict");
  for (const auto& r : rows) {
    std::string change = "-";
    if (r.baseline && r.measured)
      change = std::fabs(r.changePercent) >= 1e-3 || r.changePercent == 0
                   ? fmt::format("{:+.3f}%", r.changePercent)
                   : fmt::format("{:+.1e}%", r.changePercent);
    std::string limit = r.tolerancePercent > 0 ? fmt::format("{:g}%", r.tolerancePercent) : "exact";
    std::printf("%-52s %20s %20s %9s %7s  %s\n", r.name.c_str(), value(r.baseline, r.unit).c_str(),
                value(r.measured, r.unit).c_str(), change.c_str(), limit.c_str(),
                verdictName(r.verdict));
  }
}

nlohmann::json rowsJson(const std::vector<GateRow>& rows) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& r : rows) {
    arr.push_back(
        {{"name", r.name},
         {"unit", r.unit},
         {"baseline", r.baseline ? nlohmann::json(*r.baseline) : nlohmann::json()},
         {"measured", r.measured ? nlohmann::json(*r.measured) : nlohmann::json()},
         {"change_percent",
          std::isfinite(r.changePercent) ? nlohmann::json(r.changePercent) : nlohmann::json()},
         {"tolerance_percent", r.tolerancePercent},
         {"verdict", verdictName(r.verdict)},
         {"fails", fails(r.verdict)},
         {"cause", r.cause}});
  }
  return arr;
}

void runCheck(const RegressArgs& a) {
  Stopwatch sw;
  if (!a.json.empty()) orThrow(checkOutputPath("--json", a.json));
  Budgets b = orThrow(loadBudgets(a.budgets));
  std::optional<std::regex> only;
  if (!a.only.empty()) {
    try {
      only.emplace(a.only);
    } catch (const std::regex_error& e) {
      throw StatusError(TIDE_ERROR(Code::kInvalidArgument, "--only: bad regex '" + a.only + "'"));
    }
  }
  auto selected = [&](const std::string& name) { return !only || std::regex_search(name, *only); };
  // Whether any metric of a source could be selected: its known names, or
  // its prefix (a metric new to the file).
  auto sourceSelected = [&](const std::string& prefix) {
    if (!only) return true;
    if (std::regex_search(prefix, *only) || std::regex_search(prefix + ".", *only)) return true;
    for (const auto& [name, m] : b.metrics)
      if (name.rfind(prefix + ".", 0) == 0 && selected(name)) return true;
    return false;
  };

  Measurement m;
  TempDir tmp;
  const std::string work = a.keep.empty() ? tmp.path() : a.keep;
  if (work.empty()) throw StatusError(TIDE_ERROR(Code::kUnavailable, "cannot create a temp dir"));
  double callgrindSeconds = 0;
  if (sourceSelected("ir")) {
    CallgrindRun run = orThrow(measureInstructions(a, b, selected, work + "/callgrind"));
    callgrindSeconds = run.seconds;
    m.planted = run.planted;
    for (auto& k : run.kernels) {
      const std::string name = "ir." + k.kernel;
      if (!selected(name)) continue;
      m.figures.push_back({name, "Ir", k.instructions});
      m.profile[k.kernel] = std::move(k.functions);
    }
    if (run.planted)
      std::printf("NOTE: tide_kernels ran a planted slowdown (TIDE_KERNELS_PLANT)\n");
    if (!run.kernels.empty()) {
      const nlohmann::json ctx = runContext();
      m.inputs[kEnvironmentSource] = {{"cpu", ctx.value("cpu_model", "unknown")},
                                      {"compiler", ctx.value("compiler", "unknown")},
                                      {"libc", std::string("glibc ") + gnu_get_libc_version()},
                                      {"callgrind", run.kernels.front().creator}};
    }
  }
  auto add = [&](FigureSet fs) {
    for (auto& f : fs.figures)
      if (selected(f.name)) m.figures.push_back(std::move(f));
    for (auto& [src, d] : fs.inputs) m.inputs[src] = std::move(d);
  };
  for (const auto& sc : b.scenarios) {
    const std::string path = resolve(a.root, sc);
    // The scenario's name is in the file: measure unless no sim metric can match.
    if (only && !sourceSelected("sim")) continue;
    add(orThrow(measureScenario(path)));
  }
  for (const auto& p : b.plans)
    if (sourceSelected("plan." + p.name)) add(orThrow(measurePlan(p)));

  std::vector<GateRow> rows = judge(b, m, selected);
  printRows(rows);
  std::vector<const GateRow*> failing;
  for (const auto& r : rows)
    if (fails(r.verdict)) failing.push_back(&r);
  for (const auto& r : rows)
    if (!r.cause.empty() && !a.update)
      std::printf("%s %s: %s -> %s: %s\n", fails(r.verdict) ? "FAIL" : "note", r.name.c_str(),
                  value(r.baseline, r.unit).c_str(), value(r.measured, r.unit).c_str(),
                  r.cause.c_str());
  const double seconds = sw.seconds();
  std::printf("gate: %zu metrics, %zu beyond threshold; %.1f s (callgrind %.1f s)\n", rows.size(),
              a.update ? size_t(0) : failing.size(), seconds, callgrindSeconds);

  if (!a.json.empty()) {
    nlohmann::json out = {{"schema", "tide.regress/1"},
                          {"context", runContext()},
                          {"budgets", a.budgets},
                          {"update", a.update},
                          {"planted", m.planted},
                          {"metrics", rowsJson(rows)},
                          {"failed", failing.size()},
                          {"seconds", seconds},
                          {"callgrind_seconds", callgrindSeconds}};
    std::ofstream f(a.json);
    f << out.dump(2) << "\n";
    if (!f) throw StatusError(TIDE_ERROR(Code::kUnavailable, "cannot write --json " + a.json));
  }
  if (a.update) {
    if (m.planted)
      throw StatusError(
          TIDE_ERROR(Code::kInvalidArgument,
                     "refusing --update from a planted slowdown (TIDE_KERNELS_PLANT)"));
    orThrow(writeBudgets(updated(b, m, selected), a.budgets));
    std::printf("updated %zu baselines in %s\n", m.figures.size(), a.budgets.c_str());
    return;
  }
  if (!failing.empty()) {
    std::string names;
    for (const auto* r : failing) names += (names.empty() ? "" : ", ") + r->name;
    throw CLI::RuntimeError("regression gate failed: " + names, 1);
  }
}

}  // namespace

void addRegressCommand(CLI::App& app) {
  auto* regress = app.add_subcommand(
      "regress", "Regression gate: instruction counts and deterministic figures vs baselines");
  regress->require_subcommand(1);
  auto a = std::make_shared<RegressArgs>();
  auto* check = regress->add_subcommand(
      "check",
      "Measure every metric of the budgets file and compare with its baseline and tolerance; "
      "exit 1 listing each one beyond it (old, new, cause)");
  check->add_option("--budgets", a->budgets, "thresholds file")->capture_default_str();
  check->add_option("--root", a->root, "relative paths in the budgets file start here")
      ->capture_default_str();
  check->add_option("--only", a->only, "measure and compare only metrics matching this regex");
  check->add_option("--json", a->json, "write the verdicts (tide.regress/1, with context)");
  check->add_option("--kernels", a->kernels, "tide_kernels binary (default: bench/ beside tide)");
  check->add_option("--valgrind", a->valgrind, "valgrind binary (default: from PATH)");
  check->add_option("--keep", a->keep, "keep the callgrind dumps in this directory");
  check->add_flag("--update", a->update, "rewrite the baselines (tolerances kept) and exit 0");
  check->callback([a] { runCheck(*a); });
}

}  // namespace tide::harness
