#pragma once
// Physical lower bound of a plan on a cluster: every link's bytes over its
// bandwidth; no schedule can finish before the busiest link drains. Links:
// NIC tx / rx per (node, NIC) for network moves (a GPU uses the NIC the
// cluster's gpuNic affinity gives it), NVLink tx / rx per GPU for intra-node
// moves, PCIe D2H per GPU for copies into a host staging replica, and leaf
// uplinks / downlinks when the fabric is oversubscribed. Stage order is not
// used, so the bound holds for any schedule that respects it.

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/plan/transfer_plan.h"
#include "workloads/cluster.h"

namespace tide::plan {

struct LinkLoad {
  std::string name;  // e.g. "node 4 nic 2 tx"
  uint64_t bytes = 0;
  double bytesPerSecond = 0;
  double seconds() const { return bytesPerSecond > 0 ? bytes / bytesPerSecond : 0.0; }
};

struct LowerBound {
  double seconds = 0;
  LinkLoad bottleneck;
  // Busiest link of each class (empty name when the class carries nothing).
  LinkLoad nicTx, nicRx, nvlink, pcie, fabric;
  std::vector<LinkLoad> busiest;  // up to 8 links, slowest first

  // measured / bound (>= 1 for a real run); 0 when the bound is 0.
  double ratio(double measuredSeconds) const {
    return seconds > 0 ? measuredSeconds / seconds : 0.0;
  }
  nlohmann::json toJson() const;
};

// Fails when the plan's ranks do not fit the cluster or a used link class
// has no bandwidth in the spec.
Result<LowerBound> lowerBound(const TransferPlan& plan, const workloads::ClusterSpec& cluster);

}  // namespace tide::plan
