#include "harness/reproduce/report.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "harness/reproduce/compare_section.h"
#include "harness/reproduce/crossval_section.h"
#include "harness/reproduce/headline.h"
#include "harness/reproduce/part.h"
#include "harness/reproduce/validation_section.h"
#include "traces/results_file.h"

namespace tide::harness::reproduce {

namespace {

// A part's command as a reader reruns it from the source tree: paths under
// the tree are shown relative to it (a report names no path of the machine
// it ran on when everything lives in the tree).
std::string shownCommand(const ReportInput& in, const Part& p) {
  if (in.source.empty()) return commandLine(p.argv);
  const std::string prefix = in.source + "/";
  std::vector<std::string> argv;
  for (const auto& a : p.argv)
    argv.push_back(a.rfind(prefix, 0) == 0 ? a.substr(prefix.size()) : a);
  return commandLine(argv);
}

std::string readText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

nlohmann::json readJson(const std::string& path) {
  std::string text = readText(path);
  if (text.empty()) return nullptr;
  return nlohmann::json::parse(text, nullptr, false);  // discarded on error
}

// A number at a JSON pointer, or NaN-free "absent".
bool num(const nlohmann::json& j, const std::string& ptr, double* out) {
  if (!j.is_object()) return false;
  nlohmann::json::json_pointer p(ptr);
  if (!j.contains(p) || !j.at(p).is_number()) return false;
  *out = j.at(p).get<double>();
  return true;
}

std::string runOutput(const char* cmd) {
  std::string out;
  if (FILE* f = popen(cmd, "r")) {
    char buf[512];
    while (fgets(buf, sizeof buf, f)) out += buf;
    pclose(f);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

std::string fmtValue(double v) {
  if (v == 0) return "0";
  if (v >= 100) return fmt::format("{:.1f}", v);
  if (v >= 1) return fmt::format("{:.3f}", v);
  return fmt::format("{:.4g}", v);
}

}  // namespace

const RunRecord* findRun(const ReportInput& in, const std::string& name) {
  for (const auto& r : in.runs) {
    if (r.part.name == name) return &r;
  }
  return nullptr;
}

nlohmann::json partDocument(const ReportInput& in, const std::string& name, bool anyStatus) {
  const RunRecord* r = findRun(in, name);
  if (!r || (!anyStatus && r->result.status != "ok") || r->part.documents.empty()) return nullptr;
  return readJson(r->part.documents[0].second);
}

std::vector<Figure> collectFigures(const ReportInput& in) {
  std::vector<Figure> f;
  const char* kSim = "Kimi-K2 weight update, simulated (scenarios/kimi-k2-miles.toml)";
  for (const auto& row : reproduce::kKimiSimRows) {
    const char* s = row.strategy;
    std::string part = std::string("sim_kimi_") + row.design;
    nlohmann::json j = partDocument(in, part);
    double secs = 0, lb = 0;
    if (!num(j, "/results/0/seconds", &secs)) continue;
    for (const auto& p : in.published) {
      if (p.strategy != s) continue;
      if (p.span.empty()) {
        f.push_back({kSim, std::string(s) + " time", "s", secs, p.name(), p.seconds, part});
        continue;
      }
      double span = 0;
      if (num(j, "/results/0/spans/" + p.span + "_seconds", &span)) {
        f.push_back(
            {kSim, std::string(s) + " " + p.span + " span", "s", span, p.name(), p.seconds, part});
      }
    }
    if (num(j, "/results/0/lower_bound_seconds", &lb)) {
      f.push_back({kSim, std::string(s) + " time", "s", secs, "lower bound", lb, part});
    }
  }
  {
    double b = 0, p = 0;
    if (num(partDocument(in, "sim_kimi_broadcast"), "/results/0/seconds", &b) &&
        num(partDocument(in, "sim_kimi_p2p"), "/results/0/seconds", &p) && p > 0) {
      double pb = 0, pp = 0;
      for (const auto& pub : in.published) {
        if (!pub.primary()) continue;
        if (pub.strategy == reproduce::kKimiSimRows[0].strategy) pb = pub.seconds;
        if (pub.strategy == reproduce::kKimiSimRows[1].strategy) pp = pub.seconds;
      }
      f.push_back({kSim, "speed-up broadcast/p2p", "x", b / p, pp > 0 ? "published" : "",
                   pp > 0 ? pb / pp : 0, "sim_kimi_p2p"});
    }
  }
  for (const char* s : {"broadcast", "p2p"}) {
    std::string part = std::string("plan_kimi_") + s;
    nlohmann::json j = partDocument(in, part);
    double lb = 0, ps = 0;
    if (num(j, "/lower_bound/seconds", &lb)) {
      f.push_back({"Kimi-K2 transfer plan", std::string(s) + " lower bound", "s", lb, "", 0, part});
    }
    // The reshard planner's target (Kimi-K2 256 -> 256 plans in < 5 s), on
    // CPU time (single-threaded: it moves with the machine, not with the
    // other processes on it).
    if (num(j, "/planning_cpu_seconds", &ps)) {
      f.push_back({"Kimi-K2 transfer plan", std::string(s) + " planning CPU time", "s", ps,
                   "target", 5.0, part});
    }
  }
  const std::pair<const char*, const char*> kSyncSets[] = {
      {"sync_threads_",
       "Real weight update (tiny-moe, ranks as threads over tcp loopback, verified bit-exact)"},
      {"sync_rxe_",
       "Real weight update over rdma (tiny-moe, emulated RDMA cluster in the SoftRoCE guest: 6 "
       "nodes, 1 Mbit/s links, verified bit-exact)"}};
  for (const auto& [prefix, group] : kSyncSets) {
    double med[2] = {0, 0}, lb[2] = {0, 0};
    for (int i = 0; i < 2; ++i) {
      const char* s = i == 0 ? "broadcast" : "p2p";
      std::string part = prefix + std::string(s);
      nlohmann::json j = partDocument(in, part);
      if (!j.is_object() || !j.contains("steps") || j["steps"].empty()) continue;
      if (j.value("verified", false) != true) continue;  // a figure of bytes not checked is none
      std::vector<double> secs;
      for (const auto& st : j["steps"]) secs.push_back(st.value("seconds", 0.0));
      std::sort(secs.begin(), secs.end());
      med[i] = secs[secs.size() / 2];
      num(j, "/lower_bound_seconds", &lb[i]);
      f.push_back({group, std::string(s) + " step, median", "s", med[i],
                   lb[i] > 0 ? "lower bound" : "", lb[i], part});
    }
    if (med[0] > 0 && med[1] > 0 && lb[0] > 0 && lb[1] > 0)
      f.push_back({group, "speed-up broadcast/p2p", "x", med[0] / med[1], "lower bounds' ratio",
                   lb[0] / lb[1], prefix + std::string("p2p")});
  }
  {
    nlohmann::json j = partDocument(in, "rollout");
    const nlohmann::json* paths = nullptr;
    if (j.is_object()) {
      for (const auto& key : {"paths", "side_by_side"}) {
        if (j.contains(key) && j[key].is_object() && j[key].contains("paths"))
          paths = &j[key]["paths"];
        if (j.contains(key) && j[key].is_array()) paths = &j[key];
      }
    }
    if (paths) {
      double raw = 0;
      for (const auto& p : *paths) {
        if (p.value("path", "") == "raw") raw = p.value("gbps_median", 0.0);
      }
      for (const auto& p : *paths) {
        if (!p.contains("gbps_median")) continue;
        std::string name = p.value("path", "?");
        if (name == "raw") continue;
        f.push_back({"Rollout data plane (one batch, producers -> trainer)", name + " path", "GB/s",
                     p.value("gbps_median", 0.0), raw > 0 ? "raw bytes" : "", raw, "rollout"});
      }
    }
  }
  {
    // examples/rl_loop.py --compare: tide's rows beside the baseline's.
    nlohmann::json j = partDocument(in, "rl_loop");
    if (j.is_object() && j.contains("results") && j["results"].is_array()) {
      const char* group =
          "RL loop from Python (examples/rl_loop.py; reference: pickle-5 + shared memory)";
      for (const auto& t : j["results"]) {
        if (t.value("transport", "") != "tide") continue;
        for (const auto& b : j["results"]) {
          if (b.value("transport", "") != "baseline" ||
              b.value("mode", "") != t.value("mode", "") ||
              b.value("layout", "") != t.value("layout", ""))
            continue;
          const bool sync = t.value("mode", "") == "sync";
          char mb[32];
          std::snprintf(mb, sizeof mb, ", %.0f MB/step: ", t.value("rollout_mb_per_step", 0.0));
          const std::string what = t.value("mode", "") + " " + t.value("layout", "") + mb;
          const char* key = sync ? "transfer_s" : "receive_s";
          f.push_back({group, what + (sync ? "rollout handoff" : "rollout receive"), "s",
                       t.value(key, 0.0), "baseline", b.value(key, 0.0), "rl_loop"});
          f.push_back({group, what + "samples/s", "1/s", t.value("samples_per_s", 0.0), "baseline",
                       b.value("samples_per_s", 0.0), "rl_loop"});
        }
      }
      const nlohmann::json* push = j.contains("weight_push") ? &j["weight_push"] : nullptr;
      if (push && push->contains("rows") && (*push)["rows"].size() == 2) {
        const auto& t = (*push)["rows"][0];
        const auto& b = (*push)["rows"][1];
        char what[96];
        std::snprintf(what, sizeof what, "weight push, %.0f MB %s to %d workers",
                      t.value("bytes", 0.0) / 1e6, t.value("dtype", "?").c_str(),
                      t.value("workers", 0));
        f.push_back({group, what, "s", t.value("push_s", 0.0), "baseline", b.value("push_s", 0.0),
                     "rl_loop"});
      }
    }
  }
  for (const char* b : {"tcp", "shm", "rdma"}) {
    std::string part = std::string("transport_") + b;
    nlohmann::json j = partDocument(in, part);
    double v = 0, ref = 0;
    if (!num(j, "/gbps/median", &v)) continue;
    std::string refName =
        j.is_object() && j["reference"].is_object() ? j["reference"].value("name", "") : "";
    if (!num(j, "/reference/gbps/median", &ref)) refName.clear();
    f.push_back({"Transport bandwidth (one-sided WRITE, loopback)", std::string(b) + " WRITE",
                 "GB/s", v, refName, ref, part});
  }
  {
    nlohmann::json j = partDocument(in, "delta_bench");
    if (j.is_object() && j.contains("benchmarks")) {
      for (const auto& bm : j["benchmarks"]) {
        if (bm.value("aggregate_name", "") != "median") continue;
        std::string unit = bm.value("time_unit", "ms");
        f.push_back({"Sparse delta codec (Google Benchmark, median)", bm.value("run_name", "?"),
                     unit, bm.value("real_time", 0.0), "", 0, "delta_bench"});
      }
    }
  }
  return f;
}

nlohmann::json summaryJson(const ReportInput& in, const std::vector<Figure>& figures) {
  nlohmann::json parts = nlohmann::json::array();
  int failed = 0, skipped = 0;
  for (const auto& r : in.runs) {
    failed += r.result.status == "failed";
    skipped += r.result.status == "skipped";
    parts.push_back({{"name", r.part.name},
                     {"title", r.part.title},
                     {"status", r.result.status},
                     {"reason", r.result.reason},
                     {"seconds", r.result.seconds},
                     {"command", shownCommand(in, r.part)}});
  }
  nlohmann::json figs = nlohmann::json::array();
  for (const auto& x : figures) {
    nlohmann::json j{{"group", x.group},
                     {"name", x.name},
                     {"unit", x.unit},
                     {"value", x.value},
                     {"part", x.part}};
    if (!x.refName.empty()) {
      j["reference"] = {{"name", x.refName}, {"value", x.refValue}};
      j["ratio"] = x.refValue > 0 ? x.value / x.refValue : 0;
    }
    figs.push_back(j);
  }
  // For tide compare (result_set.h): every figure whose better direction
  // its unit says, one sample each, named part/figure.
  nlohmann::json samples = nlohmann::json::object();
  for (const auto& x : figures) {
    const char* better = x.unit == "s" ? "lower" : x.unit == "GB/s" ? "higher" : nullptr;
    const std::string key = x.part + "/" + x.name;
    if (better && !samples.contains(key))
      samples[key] = {{"values", {x.value}}, {"unit", x.unit}, {"better", better}};
  }
  nlohmann::json env = nlohmann::json::object();
  for (const auto& [k, v] : in.environment) env[k] = v;
  return {{"schema", "tide.reproduce/1"},
          {"quick", in.quick},
          {"command", in.command},
          {"started", in.started},
          {"seconds", in.seconds},
          {"environment", env},
          {"failed", failed},
          {"skipped", skipped},
          {"headline", headlineJson(in)},
          {"crossval", crossvalJson(in)},
          {"validation_matrix", matrixJsonOf(in)},
          {"compare", compareJson(in)},
          {"parts", parts},
          {"figures", figs},
          {"samples", samples}};
}

std::string reportMarkdown(const ReportInput& in, const std::vector<Figure>& figures,
                           const std::vector<std::pair<std::string, std::string>>& pngs) {
  std::string md;
  md += "# tide reproduction report\n\n";
  md += fmt::format("Set: **{}**. Command: `{}`. Started {} UTC, {:.0f} s in all.\n\n",
                    in.quick ? "quick" : "full", in.command, in.started, in.seconds);
  md += headlineMarkdown(headlineJson(in));
  for (const auto& [file, caption] : pngs) {
    if (file == kHeadlineFigure) md += "![" + caption + "](" + file + ")\n\n";
  }
  md +=
      "Bandwidth in GB/s = 1e9 B/s. The ratio is figure / reference; every figure here was "
      "measured or simulated in this run (references marked \"published\" come from the "
      "scenario file). How each figure is made: docs/reproduce.md.\n\n";
  md += crossvalMarkdown(crossvalJson(in));
  md += matrixSection(matrixJsonOf(in), pngs);
  md += compareMarkdown(compareJson(in), pngs);
  std::vector<std::string> groups;
  for (const auto& x : figures) {
    if (std::find(groups.begin(), groups.end(), x.group) == groups.end()) groups.push_back(x.group);
  }
  for (const auto& g : groups) {
    md += "## " + g +
          "\n\n| figure | value | unit | reference | reference value | ratio | part |\n"
          "|---|---:|---|---|---:|---:|---|\n";
    for (const auto& x : figures) {
      if (x.group != g) continue;
      std::string ref = x.refName.empty() ? "—" : x.refName;
      std::string rv = x.refName.empty() ? "—" : fmtValue(x.refValue) + " " + x.unit;
      std::string ratio =
          x.refName.empty() || x.refValue <= 0 ? "—" : fmt::format("{:.3f}", x.value / x.refValue);
      md += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", x.name, fmtValue(x.value), x.unit,
                        ref, rv, ratio, x.part);
    }
    md += "\n";
  }
  // The headline's and the comparisons' figures sit with their tables.
  auto elsewhere = [](const std::string& file) {
    return file == kHeadlineFigure || file == kMatrixFigure || file.rfind(kComparePrefix, 0) == 0;
  };
  if (std::any_of(pngs.begin(), pngs.end(), [&](const auto& p) { return !elsewhere(p.first); })) {
    md += "## Figures\n\n";
    for (const auto& [file, caption] : pngs) {
      if (!elsewhere(file)) md += "### " + caption + "\n\n![" + caption + "](" + file + ")\n\n";
    }
  }
  if (!in.figuresSkipped.empty()) md += "Figures skipped: " + in.figuresSkipped + "\n\n";
  md += "## Parts\n\n| part | status | wall time (s) | note |\n|---|---|---:|---|\n";
  for (const auto& r : in.runs) {
    std::string note = r.result.reason;
    for (auto& c : note) {
      if (c == '|' || c == '\n') c = ' ';
    }
    md += fmt::format("| {} | {} | {:.1f} | {} |\n", r.part.name, r.result.status, r.result.seconds,
                      note);
  }
  md +=
      "\nCommands (each part is one subprocess; results.h5 holds their output and documents):\n\n";
  for (const auto& r : in.runs)
    md += "* `" + r.part.name + "`: `" + shownCommand(in, r.part) + "`\n";
  md += "\n## Environment\n\n| key | value |\n|---|---|\n";
  for (const auto& [k, v] : in.environment) md += "| " + k + " | " + v + " |\n";
  return md;
}

std::vector<std::pair<std::string, std::string>> environment(const std::string& source) {
  std::vector<std::pair<std::string, std::string>> env;
  std::string git = "git -C '" + source + "' ";
  std::string rev = runOutput((git + "rev-parse HEAD 2>/dev/null").c_str());
  if (!rev.empty() &&
      !runOutput((git + "status --porcelain --untracked-files=no 2>/dev/null").c_str()).empty()) {
    rev += " (modified)";
  }
  env.push_back({"git_revision", rev.empty() ? "unknown (not a git checkout)" : rev});
  std::string cpu = runOutput("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'");
  env.push_back({"cpu", cpu.empty() ? "unknown" : cpu});
  env.push_back({"cpu_threads", std::to_string(std::thread::hardware_concurrency())});
  env.push_back(
      {"memory",
       runOutput("grep -m1 MemTotal /proc/meminfo | awk '{printf \"%.1f GiB\", $2/1048576}'")});
  struct utsname u {};
  if (uname(&u) == 0)
    env.push_back({"kernel", std::string(u.sysname) + " " + u.release + " " + u.machine});
  env.push_back({"os", runOutput(". /etc/os-release 2>/dev/null && echo \"$PRETTY_NAME\"")});
#if defined(__clang__)
  env.push_back({"compiler", std::string("clang ") + __clang_version__});
#elif defined(__GNUC__)
  env.push_back({"compiler", std::string("gcc ") + __VERSION__});
#endif
#ifdef NDEBUG
  env.push_back({"build", "optimized (NDEBUG)"});
#else
  env.push_back({"build", "debug (assertions on)"});
#endif
  env.push_back({"fmt", std::to_string(FMT_VERSION)});
  env.push_back(
      {"nlohmann_json", fmt::format("{}.{}.{}", NLOHMANN_JSON_VERSION_MAJOR,
                                    NLOHMANN_JSON_VERSION_MINOR, NLOHMANN_JSON_VERSION_PATCH)});
  env.push_back({"cli11", CLI11_VERSION});
  for (const auto& [key, pkg] : std::map<std::string, std::string>{{"hdf5", "hdf5"},
                                                                   {"zstd", "libzstd"},
                                                                   {"xxhash", "libxxhash"},
                                                                   {"libibverbs", "libibverbs"},
                                                                   {"liburing", "liburing"}}) {
    std::string v = runOutput(("pkg-config --modversion " + pkg + " 2>/dev/null").c_str());
    if (!v.empty()) env.push_back({key, v});
  }
  std::string nccl = runOutput(
      "ls /usr/local/cuda/lib64/libnccl.so.* 2>/dev/null | sed 's/.*libnccl.so.//' | sort | tail "
      "-1");
  if (!nccl.empty()) env.push_back({"nccl", nccl});
  std::string py = runOutput(
      "/usr/bin/python3 -c 'import "
      "numpy,h5py,matplotlib;print(numpy.__version__,h5py.__version__,matplotlib.__version__)' "
      "2>/dev/null");
  if (!py.empty()) env.push_back({"numpy h5py matplotlib", py});
  std::string iperf = runOutput("iperf3 --version 2>/dev/null | head -1");
  if (!iperf.empty()) env.push_back({"iperf3", iperf});
  return env;
}

Status writeResults(const std::string& path, const ReportInput& in) {
  traces::ResultsDoc doc;
  doc.environment = in.environment;
  doc.environment.push_back({"reproduce_command", in.command});
  doc.environment.push_back({"started", in.started});
  doc.environment.push_back({"set", in.quick ? "quick" : "full"});
  for (const auto& r : in.runs) {
    traces::ResultRun run;
    run.name = r.part.name;
    run.title = r.part.title;
    run.status = r.result.status;
    run.reason = r.result.reason;
    run.command = shownCommand(in, r.part);
    run.seconds = r.result.seconds;
    run.outputTail = r.result.outputTail;
    if (r.result.status == "ok") {
      for (const auto& [label, file] : r.part.documents) {
        std::string text = readText(file);
        if (!text.empty()) run.documents.push_back({label, text});
      }
      for (const auto& [label, file] : r.part.eventFiles) {
        struct stat st {};
        if (::stat(file.c_str(), &st) == 0 && st.st_size > 0)
          run.eventFiles.push_back({label, file});
      }
    }
    doc.runs.push_back(std::move(run));
  }
  return traces::writeResultsFile(path, doc);
}

}  // namespace tide::harness::reproduce
