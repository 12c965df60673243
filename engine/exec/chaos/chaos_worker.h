#pragma once
// One long-lived rank process of a soak run (chaos_protocol.h): runs the
// driver's commands in order for as long as the run lasts, rebuilding its
// transport and executor in a new epoch when told, keeping the shard it
// serves across epochs. The process stays the same from the first update to
// the last unless the driver kills it, so what it leaks (descriptors,
// memory) shows in its /proc entries.

#include <vector>

#include "engine/core/kv_store.h"
#include "engine/exec/rank/rank_executor.h"
#include "engine/transport/registry.h"

namespace tide::exec {

struct ChaosWorkerSetup {
  const plan::TransferPlan* plan = nullptr;
  const std::vector<RankLayout>* layouts = nullptr;
  const workloads::SyntheticWeights* weights = nullptr;
  transport::TransportConfig
      transport;     // backend and its settings; rank, world and store are set here
  ExecOptions exec;  // mode, switch, timeout; the driver's epoch fills the rest
  int rank = 0;
  int firstCommand = 0;             // a restarted rank joins at a later command
  double commandWaitSeconds = 600;  // the driver posts within this, or it is gone
};

// Returns when the driver says stop (ok), or on an error that leaves the
// rank unable to take part (the driver restarts it).
Status runChaosWorker(Store& root, const ChaosWorkerSetup& setup);

}  // namespace tide::exec
