#pragma once
// `tide sync --backend rdma --cluster emulated:...`: the run's rxe cluster
// (engine/exec/launch/rxe_cluster.h), one SoftRoCE device per node on shaped links.

#include <memory>

#include "engine/exec/launch/launcher.h"
#include "engine/exec/launch/rxe_cluster.h"
#include "harness/sync_args.h"

namespace tide::harness {

// Builds the cluster for the plan's nodes and sets what its ranks need in
// the launch: the device prefix (each rank takes its node's device) and the
// transport options a shaped rxe link needs.
Result<std::unique_ptr<exec::RxeCluster>> startRxeCluster(const SyncArgs& a, const Prepared& p,
                                                          exec::LaunchOptions& lo);

// Prints what crossed each node's shaped link and adds it to --json
// ("links"): the RDMA traffic went through the shaping.
void reportRxeLinks(const SyncArgs& a, const exec::RxeCluster& c);

}  // namespace tide::harness
