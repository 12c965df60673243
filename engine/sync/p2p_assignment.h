#pragma once
// Which training rank sends each (piece, target) pair of a reshard.
//
// Balanced (default): pairs with a single possible source are fixed first;
// the rest go largest first to the source whose busiest affected link (its
// NIC tx or the target's NIC rx across nodes; NVLink tx/rx inside a node)
// would finish earliest. The cluster's GPU->NIC affinity decides which NIC a
// rank uses, so two GPUs sharing a NIC share its load, and a source on the
// target's node (NVLink) is preferred whenever that link drains sooner.
// Round-robin: the i-th pair takes source i mod n, ignoring topology (the
// published baseline).

#include <cstdint>
#include <vector>

#include "engine/core/status.h"
#include "engine/plan/reshard.h"
#include "engine/plan/transfer_plan.h"
#include "workloads/cluster.h"

namespace tide::sync {

struct Assignment {
  std::vector<uint32_t> pairBegin;  // per piece: index of its first pair
  std::vector<uint32_t> source;     // per pair (piece, k-th target): the chosen sender
};

Result<Assignment> assignSources(const plan::TransferPlan& base, const plan::Reshard& reshard,
                                 const workloads::ClusterSpec& cluster, bool roundRobin);

}  // namespace tide::sync
