#pragma once
// `tide sync --chaos SEED --steps N`: a soak with faults. The ranks are
// long-lived processes (in the emulated cluster's namespaces, or local with
// --ranks processes) driven update by update by this process, which kills,
// stops and cuts them off as the seed's schedule says and checks after
// every update that each inference rank serves exactly the new or the
// previous version, bit-exact (engine/exec/chaos/chaos_driver.h has the recovery
// model). A report line every --chaos-report updates; --json writes the
// schedule and every window (schema tide.sync.chaos/1).

#include <CLI/CLI.hpp>
#include <atomic>

#include "engine/exec/launch/emulated_cluster.h"
#include "harness/sync_args.h"

namespace tide::harness {

// A soak's arguments against the planned run (prepare() calls it).
Status checkChaos(const SyncArgs& a, const Prepared& p);
// The driver; `cluster` is null for local processes. Returns the exit code:
// 0 when every invariant held, 1 when one broke, 130 when interrupted.
Result<int> runChaos(const SyncArgs& a, const Prepared& p, exec::EmulatedCluster* cluster,
                     const std::atomic<bool>& interrupted);
// One long-lived rank, started by the driver.
void runChaosRank(const SyncArgs& a);

}  // namespace tide::harness
