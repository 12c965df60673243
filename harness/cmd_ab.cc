// `tide ab --base BUILD_A --new BUILD_B -- CMD ARGS...`: one benchmark, two
// builds, on the same machine in the same time window. Repetitions alternate
// between the builds (A B, then B A, ...), so that whatever else loads the
// machine hits both alike; each side's samples are then compared with the
// Mann-Whitney U test of `tide compare` (harness/compare).
//
// CMD is a path relative to each build directory (bench/tide_bench_delta,
// tide). Each run writes one result file: `{out}` in ARGS is replaced by its
// path; without `{out}`, Google Benchmark flags writing JSON there are added.

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/core/clock.h"
#include "harness/command.h"
#include "harness/compare/comparison.h"
#include "harness/output_path.h"
#include "harness/regress/run_logged.h"
#include "harness/run_context.h"

namespace tide::harness {
namespace {

namespace fs = std::filesystem;

struct AbArgs {
  std::string base, next;
  std::vector<std::string> command;
  int repetitions = 9;
  double threshold = 5.0;
  double alpha = 0.05;
  double timeout = 600;
  std::string json;
  std::string keep;
  bool noFail = false;
};

std::vector<std::string> commandFor(const AbArgs& a, const std::string& build,
                                    const std::string& out) {
  std::vector<std::string> argv = {(fs::path(build) / a.command[0]).string()};
  bool placed = false;
  for (size_t i = 1; i < a.command.size(); ++i) {
    std::string arg = a.command[i];
    for (auto pos = arg.find("{out}"); pos != std::string::npos; pos = arg.find("{out}")) {
      arg.replace(pos, 5, out);
      placed = true;
    }
    argv.push_back(arg);
  }
  if (!placed) {
    argv.push_back("--benchmark_out=" + out);
    argv.push_back("--benchmark_out_format=json");
  }
  return argv;
}

// The end of a run's log, for an error message.
std::string tail(const std::string& path) {
  std::ifstream log(path);
  std::string text((std::istreambuf_iterator<char>(log)), {});
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text.size() > 1500 ? "..." + text.substr(text.size() - 1500) : text;
}

// Adds one run's metrics (each a sample) to `side`.
Status merge(ResultSet& side, const std::string& file) {
  TIDE_ASSIGN_OR_RETURN(ResultSet one, loadResultSet(file));
  for (auto& [name, m] : one.metrics) {
    Metric& into = side.metrics[name];
    into.unit = m.unit;
    into.higherIsBetter = m.higherIsBetter;
    into.values.insert(into.values.end(), m.values.begin(), m.values.end());
  }
  return Status::ok();
}

void run(const AbArgs& a) {
  if (a.command.empty())
    throw StatusError(TIDE_ERROR(Code::kInvalidArgument, "no benchmark command after --"));
  if (a.repetitions < 2 || a.repetitions > 1000)
    throw StatusError(TIDE_ERROR(Code::kInvalidArgument, "--repetitions must be 2..1000"));
  for (const auto& b : {a.base, a.next}) {
    const fs::path exe = fs::path(b) / a.command[0];
    if (::access(exe.c_str(), X_OK) != 0)
      throw StatusError(TIDE_ERROR(Code::kNotFound, exe.string() + " is not an executable"));
  }
  if (!a.json.empty()) orThrow(checkOutputPath("--json", a.json));
  std::string dir = a.keep;
  std::error_code ec;
  if (dir.empty()) {
    std::string t = (fs::temp_directory_path() / "tide-ab-XXXXXX").string();
    if (::mkdtemp(t.data()) == nullptr)
      throw StatusError(TIDE_ERROR(Code::kUnavailable, "cannot create a temp dir"));
    dir = t;
  } else {
    fs::create_directories(dir, ec);
  }
  struct Cleanup {
    std::string dir;
    bool keep;
    ~Cleanup() {
      std::error_code e;
      if (!keep) fs::remove_all(dir, e);
    }
  } cleanup{dir, !a.keep.empty()};

  ResultSet sides[2];
  sides[0].label = a.base;
  sides[1].label = a.next;
  const std::string names[2] = {"base", "new"};
  Stopwatch sw;
  for (int r = 0; r < a.repetitions; ++r) {
    for (int k = 0; k < 2; ++k) {
      const int s = (r % 2 == 0) ? k : 1 - k;  // A B, B A, A B, ...
      const std::string stem = fmt::format("{}/{}_{:03d}", dir, names[s], r);
      auto argv = commandFor(a, s == 0 ? a.base : a.next, stem + ".json");
      int code = orThrow(regress::runLogged(argv, stem + ".log", a.timeout));
      if (code != 0)
        throw StatusError(TIDE_ERROR(Code::kInternal, names[s] + " run " + std::to_string(r) +
                                                          " exited " + std::to_string(code) +
                                                          ":\n" + tail(stem + ".log")));
      std::error_code fe;
      if (fs::file_size(stem + ".json", fe) == 0 || fe)
        throw StatusError(TIDE_ERROR(
            Code::kInvalidArgument,
            names[s] + " run " + std::to_string(r) +
                " wrote no result (a filter matching nothing?): " + tail(stem + ".log")));
      orThrow(merge(sides[s], stem + ".json"));
    }
    std::fprintf(stderr, "  repetition %d of %d done (%.1f s)\n", r + 1, a.repetitions,
                 sw.seconds());
  }
  CompareOptions opt;
  opt.thresholdPercent = a.threshold;
  opt.alpha = a.alpha;
  opt.minSamples = static_cast<size_t>(a.repetitions);
  auto rows = orThrow(compareSets(sides[0], sides[1], opt));
  std::printf("%-48s %14s %14s %9s %9s  %s\n", "metric", "base median", "new median", "change",
              "p-value", "verdict");
  int regressions = 0;
  nlohmann::json out = {{"schema", "tide.ab/1"},
                        {"context", runContext()},
                        {"base", a.base},
                        {"new", a.next},
                        {"command", a.command},
                        {"repetitions", a.repetitions},
                        {"order", "interleaved: A B, B A, ..."},
                        {"alpha", a.alpha},
                        {"metrics", nlohmann::json::array()}};
  for (const auto& r : rows) {
    regressions += r.verdict == Verdict::kRegressed;
    std::printf("%-48s %14.4g %14.4g %+8.2f%% %9.4f  %s%s\n", r.name.c_str(), r.baseMedian,
                r.newMedian, r.changePercent, r.pValue, verdictName(r.verdict),
                r.unit.empty() ? "" : ("  [" + r.unit + "]").c_str());
    out["metrics"].push_back({{"name", r.name},
                              {"unit", r.unit},
                              {"better", r.higherIsBetter ? "higher" : "lower"},
                              {"base_median", r.baseMedian},
                              {"new_median", r.newMedian},
                              {"samples", r.baseCount},
                              {"change_percent", r.changePercent},
                              {"p_value", r.pValue},
                              {"threshold_percent", r.thresholdPercent},
                              {"verdict", verdictName(r.verdict)}});
  }
  out["regressions"] = regressions;
  out["seconds"] = sw.seconds();
  if (!a.json.empty()) {
    std::ofstream f(a.json);
    f << out.dump(2) << "\n";
    if (!f) throw StatusError(TIDE_ERROR(Code::kUnavailable, "cannot write " + a.json));
  }
  std::printf(
      "%d significant regression(s) beyond %.1f%% across %zu metrics, %d interleaved "
      "repetitions per build (%.1f s)\n",
      regressions, a.threshold, rows.size(), a.repetitions, sw.seconds());
  if (regressions > 0 && !a.noFail)
    throw CLI::RuntimeError("performance regression detected (see table above)", 1);
}

}  // namespace

void addAbCommand(CLI::App& app) {
  auto a = std::make_shared<AbArgs>();
  auto* cmd = app.add_subcommand(
      "ab",
      "A/B of two builds in one run: interleaved repetitions of one benchmark, Mann-Whitney U "
      "test per metric; exit 1 on a significant regression");
  cmd->add_option("--base", a->base, "build directory A (the reference)")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--new", a->next, "build directory B")->required()->check(CLI::ExistingDirectory);
  cmd->add_option("--repetitions", a->repetitions, "runs per build (default 9)");
  cmd->add_option("--threshold", a->threshold, "regression threshold in % (default 5)")
      ->check(CLI::Range(0.0, 1000.0));
  cmd->add_option("--alpha", a->alpha, "significance level (default 0.05)")
      ->check(CLI::Range(1e-9, 0.5));
  cmd->add_option("--timeout", a->timeout, "seconds per run (default 600)")
      ->check(CLI::Range(1.0, 86400.0));
  cmd->add_option("--json", a->json, "write the comparison (tide.ab/1, with context)");
  cmd->add_option("--keep", a->keep, "keep each run's result and log in this directory");
  cmd->add_flag("--no-fail", a->noFail, "report regressions but exit 0");
  cmd->add_option("command", a->command,
                  "-- CMD ARGS...: CMD relative to each build directory; {out} = result file")
      ->required();
  cmd->callback([a] { run(*a); });
}

}  // namespace tide::harness
