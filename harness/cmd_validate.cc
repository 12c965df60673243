// `tide validate`: the simulator against a real run of the same plan.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/core/clock.h"
#include "engine/core/errno_status.h"
#include "engine/core/fd.h"
#include "engine/core/status.h"
#include "engine/core/units.h"
#include "engine/plan/transfer_plan.h"
#include "harness/command.h"
#include "harness/flag_check.h"
#include "harness/sim/scenario_plans.h"
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

// One tcp stream over 127.0.0.1 between two threads: `bytes` in 1 MiB
// writes, timed from the first write to the last byte read. This is the rate
// of the host that runs every emulated node's ranks, measured now.
Result<double> loopbackOnce(size_t bytes) {
  UniqueFd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!listener.valid()) return TIDE_ERRNO("probe socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      ::listen(listener.get(), 1) != 0 ||
      ::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    return TIDE_ERRNO("probe listen on 127.0.0.1");
  UniqueFd out(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!out.valid() || ::connect(out.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0)
    return TIDE_ERRNO("probe connect to 127.0.0.1");
  UniqueFd in(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!in.valid()) return TIDE_ERRNO("probe accept");
  size_t got = 0;
  std::thread reader([&] {
    std::vector<char> buf(1 << 20);
    while (got < bytes) {
      ssize_t n = ::recv(in.get(), buf.data(), buf.size(), 0);
      if (n <= 0) break;  // the sender's error is the one reported
      got += static_cast<size_t>(n);
    }
  });
  std::vector<char> chunk(1 << 20, 'x');
  Stopwatch sw;
  size_t sent = 0;
  Status st = Status::ok();
  while (sent < bytes) {
    ssize_t n = ::send(out.get(), chunk.data(), std::min(chunk.size(), bytes - sent), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      st = TIDE_ERRNO("probe send");
      break;
    }
    sent += static_cast<size_t>(n);
  }
  out.reset();  // EOF: the reader stops even if the sender failed
  reader.join();
  TIDE_RETURN_IF_ERROR(st);
  if (got != bytes) return TIDE_ERROR(Code::kDataLoss, "probe: short read on 127.0.0.1");
  return static_cast<double>(bytes) / std::max(1e-9, sw.seconds());
}

// Median of three 64 MiB probes, bytes/s.
double probeLoopbackTcp() {
  std::vector<double> r;
  for (int i = 0; i < 3; ++i) r.push_back(orThrow(loopbackOnce(64u << 20)));
  std::sort(r.begin(), r.end());
  return r[1];
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
    workloads::ClusterSpec cluster = orThrow(workloads::loadCluster(clusterName));
    double hostTcp = 0;
    std::string hostSource = "none";
    if (clusterName.rfind("emulated:", 0) == 0 && o->hostTcp != "none") {
      hostSource = o->hostTcp == "probe" ? "probe" : "given";
      if (o->hostTcp == "probe") {
        hostTcp = probeLoopbackTcp();
      } else {
        auto rate = parseRate(o->hostTcp);
        if (!rate.isOk()) throw StatusError(rate.status().withContext("--host-tcp"));
        hostTcp = *rate;
      }
      std::printf("host tcp between ranks of a node: %.3f GB/s (%s)\n", hostTcp / 1e9,
                  hostSource.c_str());
    }
    sim::LoweringOptions lo;
    lo.chunkBytes = static_cast<double>(chunk);
    lo.hostTcpBps = hostTcp;
    sim::StrategyResult r = orThrow(sim::simulatePlan(p, cluster, orThrow(planCosts(p)), lo));
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
      j["host_tcp_gbps"] = hostTcp / 1e9;
      j["host_tcp_source"] = hostSource;
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
