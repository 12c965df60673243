#pragma once
// The simulated cluster as solver links: per GPU its NIC (tx/rx), NVLink
// (tx/rx), PCIe (H2D/D2H) and device memory (device copies, FP8
// quantization); per node its host memory bandwidth (CPU copies and NIC reads of pinned host
// buffers); per leaf switch an up- and a downlink to the spine (capacity of the leaf's NICs /
// oversubscription). GPUs are numbered node * gpusPerNode + gpu.

#include <string>
#include <vector>

#include "sim/flow_solver.h"
#include "workloads/cluster.h"

namespace tide::sim {

// Marks a resource that is not a limit in this cluster (figure 0).
inline constexpr LinkId kNoLink = 0xffffffffu;

// Path of a single local resource, or empty when it is not a limit.
inline std::vector<LinkId> onlyLink(LinkId l) {
  return l == kNoLink ? std::vector<LinkId>{} : std::vector<LinkId>{l};
}

struct GpuLinks {
  LinkId nvTx, nvRx, h2d, d2h, hbm;
};

class Topology {
 public:
  // Every figure comes from the cluster spec.
  Topology(const workloads::ClusterSpec& spec, int nodes, FlowSolver& solver);

  int gpus() const { return static_cast<int>(gpu_.size()); }
  int nodeOf(int g) const { return g / gpusPerNode_; }
  int gpusPerNode() const { return gpusPerNode_; }
  const GpuLinks& gpu(int g) const { return gpu_[g]; }
  LinkId nicTx(int g) const { return nicTx_[nicIndex(g)]; }
  LinkId nicRx(int g) const { return nicRx_[nicIndex(g)]; }
  LinkId hostMem(int node) const { return hostMem_[node]; }

  // Links from GPU a to GPU b (empty when a == b): NVLink inside a node, NICs
  // and leaf/spine links across nodes.
  void appendPath(int a, int b, std::vector<LinkId>& out) const;
  // Links of an RDMA write from GPU a's NIC to GPU b's: through the NICs even
  // inside a node (a NIC loopback), as a transfer engine's verbs go.
  void appendRdmaPath(int a, int b, std::vector<LinkId>& out) const;
  std::vector<LinkId> path(int a, int b) const;
  // One-way latency of that hop.
  double latency(int a, int b) const;
  // One-way latency of an RDMA write from a to b: the fabric's, even inside
  // a node (the NIC loopback).
  double rdmaLatency(int a, int b) const { return a == b ? 0.0 : latency_; }
  // Capacity of the narrowest link of the hop (0 when none limits it).
  double hopCapacity(int a, int b) const;

 private:
  int nicIndex(int g) const;
  void appendLinks(int a, int b, bool viaNic, std::vector<LinkId>& out) const;

  const FlowSolver& solver_;
  int gpusPerNode_ = 1;
  int nicsPerNode_ = 1;
  int nodesPerLeaf_ = 0;
  double latency_ = 0;
  std::vector<GpuLinks> gpu_;
  std::vector<LinkId> nicTx_, nicRx_, hostMem_, leafUp_, leafDown_;
};

}  // namespace tide::sim
