#include "harness/sync_rxe.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/core/units.h"
#include "engine/plan/reshard.h"

namespace tide::harness {

Result<std::unique_ptr<exec::RxeCluster>> startRxeCluster(const SyncArgs& a, const Prepared& p,
                                                          exec::LaunchOptions& lo) {
  const int nodes = plan::nodesNeeded(p.plan, p.w->cluster.gpusPerNode);
  const double rate = p.w->cluster.nicBps * p.w->cluster.nicsPerNode;
  // Where an rxe cluster can be built at all (else create() says why not):
  // one device per node on one switch.
  if (exec::rxeClusterMissing().empty()) {
    if (p.w->cluster.fabric.nodesPerLeaf > 0) {
      return TIDE_ERROR(Code::kUnimplemented,
                        "--backend rdma on an emulated cluster with leaf=: the rxe cluster has "
                        "one switch (leaves are emulated for tcp only)");
    }
    if (p.w->cluster.nicsPerNode > 1) {
      return TIDE_ERROR(Code::kUnimplemented,
                        "--backend rdma on an emulated cluster of " +
                            std::to_string(p.w->cluster.nicsPerNode) +
                            " NICs per node: the rxe cluster has one device per node (give "
                            "nics=1; several NICs are emulated for tcp only)");
    }
  }
  TIDE_ASSIGN_OR_RETURN(auto c, exec::RxeCluster::create(nodes, rate));
  // Packets wait in the shaped queues, so the ACK timeout covers every QP
  // into one node full (ackTimeoutExponent).
  const int qps = static_cast<int>(p.plan.ranks.size()) * a.streams;
  const int t = exec::RxeCluster::ackTimeoutExponent(rate, qps);
  std::printf(
      "cluster   %d nodes as rxe devices %sr0..%d, %.6f GB/s per node, ACK timeout %.2f s\n", nodes,
      c->prefix().c_str(), nodes - 1, rate / 1e9, 4.096e-6 * (1ull << t));
  std::fflush(stdout);
  lo.env[kRxeEnv] = c->prefix();
  // The ranks share the host's CPUs with rxe's kernel work, which busy
  // polling starves (measured in the guest: p2p steps 10.2 s with busy
  // polling, 5.1 s with events). Options the caller set in
  // TIDE_RDMA_OPTIONS come first and win.
  const char* own = std::getenv("TIDE_RDMA_OPTIONS");
  lo.env["TIDE_RDMA_OPTIONS"] = (own && *own ? std::string(own) + "," : std::string()) +
                                "poll=event,qp_timeout=" + std::to_string(t);
  return c;
}

void reportRxeLinks(const SyncArgs& a, const exec::RxeCluster& c) {
  nlohmann::json links = nlohmann::json::array();
  for (int n = 0; n < c.nodes(); ++n) {
    auto b = c.linkBytes(n);
    if (!b.isOk()) {
      std::fprintf(stderr, "tide: warning: %s\n", b.status().toString().c_str());
      return;
    }
    std::printf("link      node %d: %s sent, %s received through its shaped link\n", n,
                formatBytes(b->tx).c_str(), formatBytes(b->rx).c_str());
    links.push_back({{"node", n}, {"tx_bytes", b->tx}, {"rx_bytes", b->rx}});
  }
  if (a.json.empty()) return;
  nlohmann::json j;
  {
    std::ifstream in(a.json);
    j = nlohmann::json::parse(in, nullptr, false);
  }
  if (j.is_discarded()) return;  // rank 0's report failed, and said so
  j["links"] = links;
  std::ofstream out(a.json);
  out << j.dump(2) << "\n";
  if (!out) std::fprintf(stderr, "tide: warning: --json %s: cannot write\n", a.json.c_str());
}

}  // namespace tide::harness
