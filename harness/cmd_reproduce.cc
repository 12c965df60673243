// `tide reproduce`: runs the reproduction set (each part a subprocess), then
// writes results.h5, summary.json, REPORT.md and the figures.

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <memory>
#include <string>

#include "engine/core/clock.h"
#include "engine/core/status.h"
#include "harness/command.h"
#include "harness/reproduce/part.h"
#include "harness/reproduce/report.h"
#include "harness/reproduce/runner.h"
#include "harness/run_context.h"
#include "sim/scenario.h"

namespace tide::harness {

namespace {

struct ReproduceArgs {
  bool quick = false;
  std::string out;
  std::string only;  // comma-separated part names
  std::string source;
  bool noPlots = false;
  bool list = false;
  bool tinyHeadline = false;
  std::string history;  // where summary.json is appended ("" = by --out, see below)
};

std::string utcNow(const char* format) {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

bool exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

std::string selfExe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0)
    throw StatusError(TIDE_ERROR(Code::kInternal, "cannot find the tide binary (/proc/self/exe)"));
  return std::string(buf, size_t(n));
}

// The source tree: --source, else the working directory when it holds the
// scenarios, else the tree this binary was built from.
std::string sourceDir(const std::string& flag) {
  if (!flag.empty()) return flag;
  char cwd[4096];
  if (getcwd(cwd, sizeof cwd) && exists(std::string(cwd) + "/scenarios/kimi-k2-miles.toml"))
    return cwd;
  return TIDE_SOURCE_DIR;
}

void mkdirs(const std::string& path) {
  std::string cur;
  for (size_t i = 0; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      if (!cur.empty() && !exists(cur) && ::mkdir(cur.c_str(), 0755) != 0) {
        throw StatusError(TIDE_ERROR(Code::kInvalidArgument, "cannot create directory " + cur));
      }
    }
    if (i < path.size()) cur += path[i];
  }
}

std::string clockText(double s) {
  int t = int(s + 0.5);
  return t >= 60 ? fmt::format("{}m{:02d}s", t / 60, t % 60) : fmt::format("{}s", t);
}

void runReproduce(const ReproduceArgs& a, const std::string& invoked) {
  const std::string source = sourceDir(a.source);
  if (!exists(source + "/scenarios/kimi-k2-miles.toml")) {
    throw StatusError(
        TIDE_ERROR(Code::kNotFound, "no scenarios/kimi-k2-miles.toml under " + source +
                                        " (run from the source tree or pass --source)"));
  }
  const std::string out = a.out.empty() ? "results/local/" + utcNow("%Y%m%dT%H%M%SZ") : a.out;
  reproduce::SetOptions so{a.quick, a.tinyHeadline, selfExe(), source, out + "/parts", out};
  std::vector<reproduce::Part> parts = reproduce::reproductionSet(so);
  if (!a.only.empty()) {
    std::vector<reproduce::Part> keep;
    std::string names;
    for (auto& p : parts) {
      names += (names.empty() ? "" : ", ") + p.name;
      if (("," + a.only + ",").find("," + p.name + ",") != std::string::npos) keep.push_back(p);
    }
    for (size_t b = 0; b <= a.only.size();) {
      size_t e = a.only.find(',', b);
      std::string want = a.only.substr(b, e == std::string::npos ? std::string::npos : e - b);
      bool known = false;
      for (const auto& p : keep) known |= p.name == want;
      if (!known) {
        throw StatusError(TIDE_ERROR(Code::kInvalidArgument,
                                     "--only: no part '" + want + "' (parts: " + names + ")"));
      }
      if (e == std::string::npos) break;
      b = e + 1;
    }
    parts = std::move(keep);
  }
  if (a.list) {
    for (const auto& p : parts) {
      std::string cmd;
      for (const auto& w : p.argv) cmd += (cmd.empty() ? "" : " ") + w;
      std::printf("%-24s %s%s\n  %s\n", p.name.c_str(), p.title.c_str(),
                  p.skipReason.empty() ? "" : (" (skipped: " + p.skipReason + ")").c_str(),
                  cmd.c_str());
    }
    return;
  }
  mkdirs(out + "/parts");  // only once the request is known to be good

  reproduce::ReportInput in;
  in.quick = a.quick;
  in.tinyHeadline = a.tinyHeadline;
  in.source = source;
  in.command = invoked;
  in.started = utcNow("%Y-%m-%dT%H:%M:%S");
  in.environment = reproduce::environment(source);
  // Timed figures depend on what else ran: the load before and after says so.
  auto load = [] {
    std::string t;
    for (const auto& v : runContext().value("load_average", nlohmann::json::array()))
      t += fmt::format("{}{:.2f}", t.empty() ? "" : " ", v.get<double>());
    return t.empty() ? std::string("unknown") : t;
  };
  const std::string loadBefore = load();
  sim::Scenario sc = orThrow(sim::loadScenario(source + "/scenarios/kimi-k2-miles.toml"));
  in.published = sc.published;

  double expectTotal = 0;
  for (const auto& p : parts) expectTotal += p.skipReason.empty() ? p.expectSeconds : 0;
  Stopwatch total;
  double expectDone = 0;
  const int n = int(parts.size());
  std::printf("reproduce: %s set, %d parts, output %s\n", a.quick ? "quick" : "full", n,
              out.c_str());
  for (int i = 0; i < n; ++i) {
    const auto& p = parts[i];
    reproduce::PartResult r;
    if (!p.skipReason.empty()) {
      r.status = "skipped";
      r.reason = p.skipReason;
    } else {
      // ETA: the remaining parts' expected times, scaled by how this machine ran so far.
      double scale = expectDone > 0 ? std::max(0.3, total.seconds() / expectDone) : 1.0;
      std::printf("[%2d/%d] %-22s running  (elapsed %s, ETA %s)\n", i + 1, n, p.name.c_str(),
                  clockText(total.seconds()).c_str(),
                  clockText((expectTotal - expectDone) * scale).c_str());
      std::fflush(stdout);
      r = reproduce::runPart(p, out + "/parts/" + p.name + ".log");
      expectDone += p.expectSeconds;
    }
    std::printf("[%2d/%d] %-22s %-8s %7.1f s  %s\n", i + 1, n, p.name.c_str(), r.status.c_str(),
                r.seconds, r.reason.c_str());
    std::fflush(stdout);
    in.runs.push_back({p, r});
  }
  in.seconds = total.seconds();
  in.environment.push_back({"load_average_before (1, 5, 15 min)", loadBefore});
  in.environment.push_back({"load_average_after (1, 5, 15 min)", load()});

  std::vector<reproduce::Figure> figures = reproduce::collectFigures(in);
  std::string h5 = out + "/results.h5";
  Status ws = reproduce::writeResults(h5, in);
  std::vector<std::pair<std::string, std::string>> pngs;
  if (!ws.isOk()) {
    std::fprintf(stderr, "reproduce: results.h5 not written: %s\n", ws.toString().c_str());
    in.figuresSkipped = "results.h5 not written";
  } else if (a.noPlots) {
    in.figuresSkipped = "--no-plots";
  } else {
    // One script, reading only results.h5; it prints "file<TAB>caption" per figure made.
    std::string cmd = "/usr/bin/python3 '" + source + "/harness/plots/reproduce.py' '" + h5 +
                      "' '" + out + "' 2>&1";
    std::string listing;
    if (FILE* f = popen(cmd.c_str(), "r")) {
      char buf[1024];
      while (fgets(buf, sizeof buf, f)) listing += buf;
      if (pclose(f) != 0) std::fprintf(stderr, "reproduce: plots: %s\n", listing.c_str());
    }
    size_t pos = 0;
    while (pos < listing.size()) {
      size_t nl = listing.find('\n', pos);
      std::string line =
          listing.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
      pos = nl == std::string::npos ? listing.size() : nl + 1;
      size_t tab = line.find('\t');
      if (tab != std::string::npos && line.rfind("figure ", 0) == 0) {
        pngs.push_back({line.substr(7, tab - 7), line.substr(tab + 1)});
      } else if (tab != std::string::npos && line.rfind("skipped", 0) == 0) {
        in.figuresSkipped = line.substr(tab + 1);
        std::printf("figures   skipped: %s\n", in.figuresSkipped.c_str());
      }
    }
  }
  in.seconds = total.seconds();
  nlohmann::json summary = reproduce::summaryJson(in, figures);
  std::ofstream(out + "/summary.json") << summary.dump(2) << "\n";
  // The history tide compare reads (`tide compare results/history/A.json
  // B.json`, or the whole folder with --plot): a run in the default place
  // appends to the source tree's; one with --out only where --history says.
  const std::string history =
      !a.history.empty() ? a.history : (a.out.empty() ? source + "/results/history" : "");
  if (!history.empty()) {
    mkdirs(history);
    const std::string entry =
        history + "/" + utcNow("%Y%m%dT%H%M%SZ") + (a.quick ? "-quick" : "-full") + ".json";
    std::ofstream h(entry);
    h << summary.dump(2) << "\n";
    if (!h) throw StatusError(TIDE_ERROR(Code::kUnavailable, "--history: cannot write " + entry));
    std::printf("history   %s\n", entry.c_str());
  }
  std::ofstream(out + "/REPORT.md") << reproduce::reportMarkdown(in, figures, pngs);
  int failed = summary["failed"].get<int>(), skipped = summary["skipped"].get<int>();
  std::printf("reproduce: %d ok, %d skipped, %d failed in %s; %s/REPORT.md\n", n - failed - skipped,
              skipped, failed, clockText(in.seconds).c_str(), out.c_str());
  if (!ws.isOk()) throw StatusError(ws);
  if (failed > 0) {
    throw StatusError(TIDE_ERROR(Code::kInternal,
                                 fmt::format("{} part(s) failed (see {}/REPORT.md)", failed, out)));
  }
}

}  // namespace

void addReproduceCommand(CLI::App& app) {
  auto a = std::make_shared<ReproduceArgs>();
  auto* cmd = app.add_subcommand(
      "reproduce", "Run the reproduction set; write results.h5, summary.json, REPORT.md");
  cmd->add_flag("--quick", a->quick, "the small set (< 15 min on 2 cores)");
  cmd->add_option("--out", a->out, "output directory (default results/local/<UTC time>)");
  cmd->add_option("--only", a->only, "comma-separated part names to run");
  cmd->add_option("--source", a->source, "source tree holding scenarios/ and scripts/");
  cmd->add_flag("--no-plots", a->noPlots, "skip the matplotlib figures");
  cmd->add_option("--history", a->history,
                  "append summary.json here (default: the source tree's results/history when "
                  "--out is not given)");
  cmd->add_flag("--list", a->list, "print the parts of the set (with --only: those) and exit");
  cmd->add_flag("--headline-tiny", a->tinyHeadline,
                "the headline's real run on tiny-moe (seconds; for tests: too small to show "
                "p2p vs broadcast)");
  cmd->callback([a, cmd] {
    std::string invoked = "tide reproduce";
    if (a->quick) invoked += " --quick";
    if (!a->out.empty()) invoked += " --out " + a->out;
    if (!a->only.empty()) invoked += " --only " + a->only;
    if (a->noPlots) invoked += " --no-plots";
    if (!a->history.empty()) invoked += " --history " + a->history;
    if (a->tinyHeadline) invoked += " --headline-tiny";
    (void)cmd;
    runReproduce(*a, invoked);
  });
}

}  // namespace tide::harness
