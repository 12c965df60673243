#include "harness/sim/plan_prediction.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "engine/core/clock.h"
#include "engine/core/errno_status.h"
#include "engine/core/fd.h"
#include "engine/core/units.h"
#include "harness/sim/scenario_plans.h"
#include "sim/plan_lowering.h"
#include "workloads/cluster.h"

namespace tide::harness {

namespace {

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

}  // namespace

Result<double> probeLoopbackTcp() {
  std::vector<double> r;
  for (int i = 0; i < 3; ++i) {
    TIDE_ASSIGN_OR_RETURN(double bps, loopbackOnce(64u << 20));
    r.push_back(bps);
  }
  std::sort(r.begin(), r.end());
  return r[1];
}

Result<PlanPrediction> predictPlan(const plan::TransferPlan& p, const std::string& clusterName,
                                   const std::string& hostTcp) {
  PlanPrediction out;
  out.cluster = clusterName;
  out.hostTcpSource = "none";
  TIDE_ASSIGN_OR_RETURN(workloads::ClusterSpec cluster, workloads::loadCluster(clusterName));
  if (cluster.kind == workloads::ClusterKind::kEmulated && hostTcp != "none") {
    if (hostTcp == "probe") {
      TIDE_ASSIGN_OR_RETURN(out.hostTcpBps, probeLoopbackTcp());
      out.hostTcpSource = "probe";
    } else {
      auto rate = parseRate(hostTcp);
      if (!rate.isOk()) return rate.status().withContext("--host-tcp");
      out.hostTcpBps = *rate;
      out.hostTcpSource = "given";
    }
  }
  sim::LoweringOptions lo;
  lo.hostTcpBps = out.hostTcpBps;
  TIDE_ASSIGN_OR_RETURN(sim::Calibration costs, planCosts(p));
  TIDE_ASSIGN_OR_RETURN(out.result, sim::simulatePlan(p, cluster, costs, lo));
  out.planBytes = p.summarize().totalBytes;
  return out;
}

nlohmann::json PlanPrediction::inputsJson() const {
  return {{"cluster", cluster},
          {"host_tcp_gbps", hostTcpBps / 1e9},
          {"host_tcp_source", hostTcpSource},
          {"plan_bytes", planBytes}};
}

}  // namespace tide::harness
