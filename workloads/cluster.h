#pragma once
// Cluster description used by the simulator, the planner's lower bounds and
// the real executor's emulated mode. Bandwidths are bytes/s (GB/s = 1e9 B/s).

#include <string>
#include <string_view>
#include <vector>

#include "engine/core/status.h"

namespace tide::workloads {

struct FabricSpec {
  int nodesPerLeaf = 0;           // 0 = a single non-blocking switch
  double oversubscription = 1.0;  // leaf downlink : uplink bandwidth ratio (>= 1)
  double latencySeconds = 2e-6;   // one-way NIC-to-NIC latency
};

// What a cluster spec describes: a modelled cluster (a preset or a file),
// or an emulated one whose nodes are network namespaces of this host
// (parseEmulated), where the ranks of all nodes share the host's CPUs.
enum class ClusterKind : uint8_t { kModelled, kEmulated };

struct ClusterSpec {
  std::string name;
  ClusterKind kind = ClusterKind::kModelled;
  int nodes = 1;
  int gpusPerNode = 1;
  int nicsPerNode = 1;
  double nicBps = 0;  // per NIC, one direction
  // The share of nicBps that carries payload. An emulated node link is an
  // HTB class on a veth of MTU 1500 that meters whole Ethernet frames: 1514
  // bytes on the wire for 1448 of TCP payload (with timestamps), so
  // 1448/1514 there (rdma over rxe carries less per frame: still a bound).
  // 1 for the presets and cluster files, whose rates are payload rates.
  double nicPayloadFraction = 1.0;
  double nvlinkBps = 0;  // per GPU, one direction, achievable
  double pcieH2DBps = 0;
  double pcieD2HBps = 0;
  double hostMemBps = 0;  // host memcpy bandwidth per node
  double hbmBps = 0;      // device memory per GPU (a device copy reads and writes each byte)
  double storageBps = 0;  // per node
  FabricSpec fabric;
  // gpuNic[g] = NIC index of GPU g of a node; empty = g * nics / gpus.
  std::vector<int> gpuNic;

  int worldSize() const { return nodes * gpusPerNode; }
  double nicPayloadBps() const { return nicBps * nicPayloadFraction; }
  int nicOfGpu(int localGpu) const;
  int nodeOfRank(int rank) const { return rank / gpusPerNode; }
  std::string toString() const;
};

// "h100-ib-8x400", "h800-roce", "h20", "laptop".
std::vector<std::string> clusterPresets();
// A preset name with optional ":nodes=N" override, or a TOML file path.
Result<ClusterSpec> loadCluster(std::string_view nameOrPath);
Result<ClusterSpec> parseClusterToml(std::string_view tomlText, std::string_view origin);
// "emulated:nodes=N,gpus=G,nic=RATE[,nics=K][,leaf=L[,oversub=X]]" for the
// real executor: ranks on one host, links throttled to RATE (e.g. 10Gbps,
// 2GB/s); with leaf=L, L nodes per leaf switch whose uplink carries their
// links' rate / X (oversub, default 1).
Result<ClusterSpec> parseEmulated(std::string_view text);
Status validateCluster(const ClusterSpec& c);

}  // namespace tide::workloads
