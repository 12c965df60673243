#pragma once
// `tide sync`'s arguments and the run they describe, shared by the plain
// run (cmd_sync.cc) and the soak with faults (sync_chaos.cc).

#include <memory>
#include <string>
#include <vector>

#include "engine/exec/rank_executor.h"
#include "engine/exec/sync_run.h"
#include "engine/plan/lower_bound.h"
#include "engine/transport/registry.h"
#include "harness/sync_replay.h"
#include "harness/workload_options.h"

namespace tide::harness {

// The environment variable that names an emulated cluster's namespaces.
inline constexpr const char* kNetnsEnv = "TIDE_SYNC_NETNS_PREFIX";
// The environment variable that names an rxe cluster's devices (rdma on an
// emulated cluster: rxe_cluster.h).
inline constexpr const char* kRxeEnv = "TIDE_SYNC_RXE_PREFIX";

// --chaos: a soak with faults; the driver draws the schedule from the seed.
struct ChaosArgs {
  std::string seed;           // empty: no soak
  std::string kinds = "all";  // fault kinds (fault_schedule.h)
  double rate = 0.3;          // chance that an update gets a fault
  double maxBurst = 1.5;      // link bursts and slow ranks last at most this (s)
  int reportEvery = 100;      // a report line every that many updates
  bool verbose = false;       // a line per abandoned update
  bool allowInplace = false;  // tests: updates in place (no rollback), to show a check fails
  bool on() const { return !seed.empty(); }
};

struct SyncArgs {
  WorkloadOptions workload;
  std::string backend = "tcp";
  int steps = 3;
  std::string json;
  std::string trace;   // append events to an existing trace file
  std::string events;  // write events to a new file
  std::string replay;  // a trace whose versions the updates are
  std::string ranks = "auto";
  std::string inferDtype = "bf16";
  double timeout = 120;
  int streams = 4;
  bool poison = false;
  bool worker = false;
  bool sparse = false;   // p2p: delta blocks instead of bytes
  std::string deltaDir;  // disk-delta: shared directory (default: a temporary one)
  int baseEvery = 8;     // disk-delta: a full base every K versions
  // store: nodes, replicas, fragment size, catalog file
  exec::StorePathOptions store;
  std::string storeFragment = "4MiB";
  std::string storeLoseWhen = "read";  // the lost node: after the commit, or while importing
  std::string switchMode = "inplace";  // inplace | shadow (version_switch.h)
  int joinAtStep = -1;                 // store: the last engine joins after this step
  int corruptRank = -1;                // testing: flip a byte of this rank's shard after step 1
  ChaosArgs chaos;                     // --chaos: a soak with faults (sync_chaos.h)
};

struct Prepared {
  std::unique_ptr<Workload> w;
  plan::TransferPlan plan;
  plan::LowerBound bound;
  bool emulated = false;
  std::string strategy;  // as asked for (disk-delta runs on p2p's plan)
  const sync::StrategyDescriptor* descriptor = nullptr;
  exec::UpdateMode mode = exec::UpdateMode::kFull;
  ReplaySource replay;  // the generator's parameters and routing
};

// Checks the arguments and plans the update (no side effects).
Result<Prepared> prepare(const SyncArgs& a);
exec::RankRunOptions runOptions(const SyncArgs& a, const Prepared& p);
transport::TransportConfig transportConfig(const SyncArgs& a);
// The command line of one rank of a launched run.
std::vector<std::string> workerArgv(const SyncArgs& a);
// What verification must cover: every inference holding of the plan, on
// every step its rank serves (an engine joining after step J serves from J+1).
uint64_t expectedVerifiedBytes(const plan::TransferPlan& plan, const exec::RankRunOptions& o);

}  // namespace tide::harness
