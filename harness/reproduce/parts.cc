// The reproduction set: what `tide reproduce` runs, quick and full.

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "harness/reproduce/compare_section.h"
#include "harness/reproduce/crossval_section.h"
#include "harness/reproduce/headline.h"
#include "harness/reproduce/part.h"
#include "harness/reproduce/validation_section.h"
#include "harness/workload_options.h"

namespace tide::harness::reproduce {

namespace {

bool isFile(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string dirOf(const std::string& p) {
  auto slash = p.rfind('/');
  return slash == std::string::npos ? "." : p.substr(0, slash);
}

// Why the emulated cluster (network namespaces, tc shaping) cannot run here.
std::string netnsSkipReason() {
  if (geteuid() != 0) return "needs root to create network namespaces";
  if (std::system("command -v ip >/dev/null 2>&1 && command -v tc >/dev/null 2>&1") != 0) {
    return "needs iproute2 (ip, tc)";
  }
  if (std::system("ip netns add tdrp-probe >/dev/null 2>&1 && ip netns del tdrp-probe") != 0) {
    return "cannot create network namespaces here";
  }
  return "";
}

// Tiny Kimi-K2-shaped model, ranks as threads: the real executor moves every
// byte and verifies it (the executor's overheads, not the phenomenon: that is
// the headline's run).
const std::vector<std::string> kSmallSync = {
    "--model",   "tiny-moe", "--train", "tp=2,pp=2,ep=2", "--infer",   "engines=2,tp=2,ep=2",
    "--bucket",  "64KiB",    "--chunk", "16KiB",          "--streams", "1",
    "--timeout", "120"};

}  // namespace

std::string commandLine(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) {
    if (!s.empty()) s += ' ';
    bool plain = !a.empty() && a.find_first_of(" \t\"'$\\*?;&|<>()") == std::string::npos;
    s += plain ? a : "'" + a + "'";
  }
  return s;
}

std::vector<Part> reproductionSet(const SetOptions& o) {
  std::vector<Part> parts;
  const std::string& T = o.tide;
  const std::string d = o.partDir + "/";
  const std::string scenario = o.source + "/scenarios/kimi-k2-miles.toml";
  const std::string buildDir = dirOf(T);
  const bool q = o.quick;

  // The headline first: it is what the report opens with.
  addHeadlineParts(o, netnsSkipReason(), parts);
  for (const auto& row : kKimiSimRows) {
    std::string n = std::string("sim_kimi_") + row.design;
    const char* s = row.strategy;
    parts.push_back({n,
                     std::string("Kimi-K2 weight update, simulated: ") + s,
                     {T, "sim", "--scenario", scenario, "--strategy", s, "--json", d + n + ".json",
                      "--events", d + n + "_events.h5"},
                     15,
                     600,
                     "",
                     {{"result", d + n + ".json"}},
                     {{row.design, d + n + "_events.h5"}}});
  }
  {
    // The simulator's held-out error on the published rows, with the
    // regression gate's settings: ~15 s of CPU (two free constants, grid 3).
    std::string why;
    std::vector<std::string> args = crossvalArgs(o.source, &why);
    Part p{kCrossvalPart,
           "simulator on the published runs: leave-one-out (held out) beside in sample",
           {T, "sim", "crossval"},
           30,
           900,
           why,
           {{"result", d + kCrossvalPart + ".json"}},
           {}};
    p.argv.insert(p.argv.end(), args.begin(), args.end());
    p.argv.insert(p.argv.end(), {"--json", d + kCrossvalPart + ".json"});
    parts.push_back(std::move(p));
  }
  for (auto& p : compareParts(o)) parts.push_back(std::move(p));
  // Every row of the validation matrix for real: ~15 min, the full set only.
  if (!q) parts.push_back(matrixPart(o, netnsSkipReason()));
  parts.push_back({"sim_sweep",
                   "Kimi-K2 p2p/broadcast ratio, swept over inference EP, nodes, NIC",
                   {T, "sim", "sweep", "--scenario", scenario, "--ep", q ? "16,32" : "8,16,32,64",
                    "--nodes", q ? "8,16" : "8,16,32", "--nic-gbps", q ? "25,50" : "12.5,25,50",
                    "--json", d + "sim_sweep.json", "--csv", d + "sim_sweep.csv"},
                   q ? 90.0 : 240.0,
                   1200,
                   "",
                   {{"result", d + "sim_sweep.json"}},
                   {}});
  parts.push_back({"sim_rl",
                   "RL steps, synchronous vs fully asynchronous (simulated)",
                   {T, "sim", "rl", "--scenario", scenario, "--mode", "both", "--staleness", "2",
                    "--json", d + "sim_rl.json"},
                   20,
                   600,
                   "",
                   {{"result", d + "sim_rl.json"}},
                   {}});
  const WorkloadOptions kimi;  // the published Kimi-K2 run's layouts
  for (const char* s : {"broadcast", "p2p"}) {
    std::string n = std::string("plan_kimi_") + s;
    parts.push_back(
        {n,
         std::string("Kimi-K2 transfer plan and its lower bound: ") + s,
         {T, "plan", "--model", kimi.model, "--train", kimi.train, "--infer", kimi.infer,
          "--cluster", "h100-ib-8x400:nodes=64", "--strategy", s, "--json", d + n + ".json"},
         20,
         600,
         "",
         {{"result", d + n + ".json"}},
         {}});
  }
  for (const char* s : {"broadcast", "p2p"}) {
    std::string n = std::string("sync_threads_") + s;
    Part p{n,
           std::string("real weight update, ranks as threads (tcp loopback): ") + s,
           {T, "sync"},
           20,
           300,
           "",
           {{"result", d + n + ".json"}},
           {{s, d + n + "_events.h5"}}};
    p.argv.insert(p.argv.end(), kSmallSync.begin(), kSmallSync.end());
    for (const auto& a : std::vector<std::string>{
             "--cluster", "h100-ib-8x400:nodes=2", "--strategy", s, "--steps", q ? "3" : "9",
             "--json", d + n + ".json", "--events", d + n + "_events.h5"}) {
      p.argv.push_back(a);
    }
    parts.push_back(std::move(p));
  }
  parts.push_back(
      {"trace_gen",
       "RL step trace: routing, per-tensor sparse changes, rollout",
       {T, "trace", "gen", "--model", q ? "tiny-moe" : "kimi-k2", "--scale", q ? "1" : "64",
        "--steps", q ? "3" : "5", "--threads", "2", "--out", d + "trace.h5"},
       q ? 15.0 : 120.0,
       900,
       "",
       {},
       {}});
  parts.push_back({"trace_info",
                   "sparse-delta figures of the generated trace",
                   {T, "trace", "info", d + "trace.h5"},
                   5,
                   120,
                   "",
                   {},
                   {}});
  {
    std::string bench = buildDir + "/bench/tide_bench_delta";
    parts.push_back(
        {"delta_bench",
         "sparse delta codec: encode/apply (Google Benchmark)",
         {bench, "--benchmark_repetitions=" + std::string(q ? "3" : "9"),
          "--benchmark_min_time=0.05", q ? "--benchmark_filter=/(10|100)/" : "--benchmark_filter=.",
          "--benchmark_out_format=json", "--benchmark_out=" + d + "delta_bench.json"},
         q ? 40.0 : 150.0,
         900,
         isFile(bench)
             ? ""
             : "tide_bench_delta not built (cmake --build <dir> --target tide_bench_delta)",
         {{"result", d + "delta_bench.json"}},
         {}});
  }
  parts.push_back(
      {"rollout",
       "rollout data plane: raw, tide, padded, copy paths side by side",
       {T, "rollout", "--backend", "shm", "--reps", q ? "3" : "9", "--json", d + "rollout.json"},
       30,
       600,
       "",
       {{"result", d + "rollout.json"}},
       {}});
  // The Python package in a real RL loop (docs/python.md): it runs where the
  // module was built (pybind11-dev) and torch is installed.
  const bool pythonBuilt = isFile(buildDir + "/python/tide/__init__.py");
  parts.push_back(
      {"rl_loop",
       "RL loop from Python: tide's data plane and weight sync vs pickle-5 over shared memory",
       {o.source + "/scripts/rl-loop.sh", buildDir, "--steps", q ? "3" : "6", "--json",
        d + "rl_loop.json"},
       q ? 40.0 : 70.0,
       600,
       pythonBuilt ? "" : "the Python module is not built (pybind11-dev; docs/python.md)",
       {{"result", d + "rl_loop.json"}},
       {}});
  for (const char* b : {"tcp", "shm"}) {
    std::string n = std::string("transport_") + b;
    parts.push_back(
        {n,
         std::string("transport ") + b + (std::string(b) == "tcp" ? " vs iperf3" : " vs memcpy"),
         {T, "bench", "transport", "--backend", b, "--size", q ? "256MiB" : "1GiB", "--block",
          "4MiB", "--streams", "4", "--repetitions", q ? "3" : "9", "--json", d + n + ".json"},
         q ? 30.0 : 120.0,
         600,
         "",
         {{"result", d + n + ".json"}},
         {}});
  }
  // p2p vs broadcast over rdma on the emulated RDMA cluster: one rxe device
  // per node on HTB-shaped links, in the SoftRoCE guest (docs/sync.md).
  for (const char* s : {"broadcast", "p2p"}) {
    std::string n = std::string("sync_rxe_") + s;
    parts.push_back(
        {n,
         std::string("real weight update over rdma, emulated RDMA cluster (SoftRoCE): ") + s,
         {o.source + "/scripts/softroce.sh",
          "run",
          "--devices",
          "2",
          "--share",
          o.partDir,
          "--timeout",
          "600",
          "--",
          T,
          "sync",
          "--model",
          "tiny-moe",
          "--train",
          "tp=1,pp=4",
          "--infer",
          "engines=1,tp=2",
          "--backend",
          "rdma",
          "--cluster",
          "emulated:nodes=6,gpus=1,nic=1Mbps,nics=1",
          "--bucket",
          "1MiB",
          "--chunk",
          "64KiB",
          "--streams",
          "1",
          "--steps",
          "3",
          "--strategy",
          s,
          "--json",
          d + n + ".json"},
         90,
         700,
         q ? "quick set: the SoftRoCE guest boots a VM (minutes); run without --quick" : "",
         {{"result", d + n + ".json"}},
         {}});
  }
  parts.push_back(
      {"transport_rdma",
       "transport rdma vs ib_write_bw (SoftRoCE)",
       {o.source + "/scripts/softroce-bench.sh", "--build", buildDir, "--reps", q ? "3" : "5",
        "--json", d + "transport_rdma.json"},
       600,
       1500,
       q ? "quick set: the SoftRoCE guest boots a VM (several minutes); run without --quick" : "",
       {{"result", d + "transport_rdma.json"}},
       {}});
  return parts;
}

}  // namespace tide::harness::reproduce
