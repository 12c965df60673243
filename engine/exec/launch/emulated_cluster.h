#pragma once
// An emulated cluster on one host: each node is a network namespace, joined
// to the others through a bridge that lives in a namespace of its own (veth
// pairs, one per NIC; with leaves, a bridge per leaf switch below it), and
// each NIC's link is shaped with an HTB class to the NIC's rate in both
// directions (tx on the node side, rx on the bridge side), so
// the bandwidth ratios of a real cluster hold on one machine. The bridge's
// namespace is the hub: the bridge holds an address of its own, unshaped,
// where the launcher hosts the rendezvous store from inside that namespace
// (NamespaceScope). Nothing is added to the host's namespace, so the host's
// addresses, routes and firewall (a host on 198.51.100.0/24 itself, an INPUT
// policy that drops) cannot take the cluster's traffic.
//
// Addresses come only from the documentation range 198.51.100.0/24: the hub is
// 198.51.100.1, NIC k of node i is 198.51.100.(10 + i * nics + k). Every name starts with a run
// prefix "td<4 hex>" so leftovers of a killed run can be found and removed (cleanupAll, `tide
// cluster cleanup`). The destructor tears everything down. Needs CAP_NET_ADMIN (root) and the `ip`
// and `tc` tools.
//
// One emulated cluster per host at a time: two would share the host's CPUs
// and each would measure the other's load as its links' speed. create()
// takes a host-wide lock (a flock that dies with its holder), waiting for
// another run to finish; teardown frees it.

#include <memory>
#include <string>
#include <vector>

#include "engine/core/fd.h"
#include "engine/core/status.h"
#include "engine/exec/launch/net_namespace.h"

namespace tide::exec {

// Empty when the process may create namespaces, else the reason it may not.
std::string netAdminMissing();

// NICs and switches. nicsPerNode links per node, each shaped to the NIC
// rate, each with an address of its own (nicAddress) and source routing in
// the node's namespace, so a rank that binds its NIC's address sends and
// receives through that NIC only. Leaves: nodesPerLeaf nodes on each leaf's
// bridge, each leaf joined to the hub's bridge (the spine) by one link
// shaped to leafUplinkBytesPerSecond per direction (an oversubscribed leaf:
// less than its nodes' links together); 0: every node on the hub's bridge.
struct EmulatedFabric {
  int nicsPerNode = 1;
  int nodesPerLeaf = 0;
  double leafUplinkBytesPerSecond = 0;
};

class EmulatedCluster {
 public:
  static constexpr int kMaxNodes = 200;

  // nodes namespaces, each NIC's link shaped to nicBytesPerSecond (GB/s =
  // 1e9 B/s) per direction; waits up to waitSeconds for another cluster on
  // this host.
  static Result<std::unique_ptr<EmulatedCluster>> create(int nodes, double nicBytesPerSecond,
                                                         EmulatedFabric fabric = {},
                                                         double waitSeconds = 600);
  ~EmulatedCluster();
  EmulatedCluster(const EmulatedCluster&) = delete;
  EmulatedCluster& operator=(const EmulatedCluster&) = delete;

  const std::string& prefix() const { return prefix_; }
  int nodes() const { return nodes_; }
  // Where the rendezvous store listens, inside hubNamespace().
  static std::string hubAddress() { return "198.51.100.1"; }
  std::string hubNamespace() const { return prefix_ + "-br"; }
  // NIC `nic` of node `node` in a cluster of nicsPerNode NICs per node
  // (198.51.100.(10 + node * nicsPerNode + nic)); nodeAddress: its NIC 0
  // with one NIC per node.
  static std::string nicAddress(int node, int nic, int nicsPerNode);
  static std::string nodeAddress(int node) { return nicAddress(node, 0, 1); }
  static std::string nodeNamespace(const std::string& prefix, int node);
  // The node's end of NIC `nic`'s link (in its namespace); the hub's end
  // has 'b' for the 'n' after the prefix. A leaf's uplink is "<prefix>u<L>"
  // (its leaf end, in the hub's namespace) and "<prefix>s<L>" (its spine end).
  std::string nicDevice(int node, int nic) const;

  // Fault injection: node `node`'s link (both directions) drops packets at
  // random with probability lossPercent and runs at rateFraction of its
  // rate (packets wait in its queue: the delay of a congested link) until
  // restoreLink() undoes both (injected_fault.h owns the pair). Needs only
  // what the shaping already uses (HTB, bfifo) and cls_bpf: the loss is a
  // classic BPF filter on a random number (no netem, which not every
  // kernel has) that sends the packet to a class whose queue holds nothing.
  Status impairLink(int node, double lossPercent, double rateFraction);
  Status restoreLink(int node);

  // Removes everything this run created (also called by the destructor).
  Status teardown();
  // Removes every namespace of any run (names "td<4 hex>-...") when
  // no cluster is up on this host (refused while one is). Returns how many
  // objects were removed.
  static Result<int> cleanupAll();

 private:
  EmulatedCluster(std::string prefix, int nodes, int nics)
      : prefix_(std::move(prefix)), nodes_(nodes), nics_(nics) {}
  Status build(double bytesPerSecond, const EmulatedFabric& fabric);
  // The shaped ends of a node's links, per NIC (node end, hub end): (namespace, device).
  std::vector<std::pair<std::string, std::string>> linkEnds(int node) const;
  Status setRate(const std::string& ns, const std::string& dev, double bitsPerSecond) const;
  // The tc commands of a link's HTB classes at a rate ("add" or "change").
  static std::vector<std::vector<std::string>> linkClasses(const std::string& ns,
                                                           const std::string& dev,
                                                           double bitsPerSecond,
                                                           uint64_t burstBytes,
                                                           const std::string& verb);

  std::string prefix_;
  int nodes_;
  int nics_;
  bool up_ = false;
  double bitsPerSecond_ = 0;             // a link's HTB rate
  uint64_t burstBytes_ = 0;              // and its burst
  std::vector<std::string> namespaces_;  // created so far
  UniqueFd hostLock_;                    // held while the cluster exists
};

// Runs argv (no shell), returns its failure with the command and its stderr.
Status runTool(const std::vector<std::string>& argv);

}  // namespace tide::exec
