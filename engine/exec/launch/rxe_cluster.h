#pragma once
// An emulated RDMA cluster on one host: one SoftRoCE (rdma_rxe) device per
// node, each on a veth of its own whose peer is a port of one bridge, and
// each node's link shaped with an HTB class to the node's NIC rate in both
// directions (tx on the node's veth, rx on its bridge port). rxe's RoCEv2
// packets pass both qdiscs, so RDMA traffic between nodes is shaped like the
// tcp emulated cluster's (emulated_cluster.h); traffic between two ranks of
// one node stays inside its rxe device (rxe's loopback), unshaped, as on a
// real node.
//
// Everything lives in the initial network namespace: this kernel's rdma_rxe
// sends only from there (an rxe device on a veth moved into another
// namespace comes up, but its QPs fail). With every node address local,
// three settings per node veth make the kernel deliver a packet through the
// bridge to the right node: accept_local=1 (the source is a local address),
// rp_filter=0, arp_ignore=1 (only node j's veth answers ARP for node j's
// address; otherwise every veth would), and arp_ignore=8 on the bridge
// device (it answers no ARP at all). The route is right without more: rxe
// routes with the device as the output interface.
//
// Addresses come only from the documentation range 192.0.2.0/24: node i is
// 192.0.2.(10 + i). Names start with a run prefix "tr<4 hex>": node veth
// "<p>n<i>", bridge port "<p>b<i>", bridge "<p>br", rxe device "<p>r<i>", so
// leftovers of a killed run can be found (cleanupAll). One such cluster per
// host at a time (a host-wide flock). Needs root and a kernel with rdma_rxe,
// e.g. the SoftRoCE guest (scripts/softroce.sh run).

#include <memory>
#include <string>
#include <vector>

#include "engine/core/fd.h"
#include "engine/core/status.h"

namespace tide::exec {

// Empty when this process can build an rxe cluster here, else the reason.
std::string rxeClusterMissing();

class RxeCluster {
 public:
  static constexpr int kMaxNodes = 200;

  // nodes rxe devices, each link shaped to bytesPerSecond (GB/s = 1e9 B/s)
  // per direction; waits up to waitSeconds for another rxe cluster to go.
  static Result<std::unique_ptr<RxeCluster>> create(int nodes, double bytesPerSecond,
                                                    double waitSeconds = 600);
  ~RxeCluster();
  RxeCluster(const RxeCluster&) = delete;
  RxeCluster& operator=(const RxeCluster&) = delete;

  const std::string& prefix() const { return prefix_; }
  int nodes() const { return nodes_; }
  static std::string nodeAddress(int node);
  // The RDMA device of node `node` of the cluster named by `prefix`.
  static std::string deviceName(const std::string& prefix, int node);

  // Bytes node `node` has sent (tx) and been sent (rx) through its shaped
  // link since the cluster came up: the netdev counters of its veth and of
  // its bridge port, whose root qdiscs do the shaping. Traffic between two
  // ranks of one node stays in its rxe device and is not counted.
  struct LinkBytes {
    uint64_t tx = 0;
    uint64_t rx = 0;
  };
  Result<LinkBytes> linkBytes(int node) const;

  // The IB ACK timeout exponent (4.096 us * 2^t per try) for QPs on links of
  // bytesPerSecond: what queuePairs QPs can have in flight into one node
  // (rxe: 128 unacked packets of 1 KiB each) waits in that node's shaped
  // queue, so the timeout is twice the time to drain all of it, at least
  // 0.54 s (t = 17, the transport's default). A shorter one retransmits
  // packets that were only queued.
  static int ackTimeoutExponent(double bytesPerSecond, int queuePairs);

  // Removes everything this run created (also called by the destructor).
  Status teardown();
  // Removes the devices and links of any run (names "tr<4 hex>...") when no
  // rxe cluster is up on this host. Returns how many objects were removed.
  static Result<int> cleanupAll();

 private:
  RxeCluster(std::string prefix, int nodes) : prefix_(std::move(prefix)), nodes_(nodes) {}
  Status build(double bytesPerSecond);

  std::string prefix_;
  int nodes_;
  bool up_ = false;
  std::vector<std::string> links_;    // created so far (node veths, the bridge)
  std::vector<std::string> devices_;  // rxe devices created so far
  UniqueFd hostLock_;                 // held while the cluster exists
};

}  // namespace tide::exec
