#pragma once
// What a run measures beyond step times, filled by rank 0's executor from
// every rank's records: the version switch (pause, shadow memory, what
// generation read meanwhile) and an elastic join.

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/kv_store.h"
#include "engine/core/status.h"
#include "engine/exec/executor/version_switch.h"

namespace tide::exec {

struct SwitchStep {
  int step = 0;
  double pauseSeconds = 0;         // slowest rank's swap
  double skewSeconds = 0;          // first to last rank switching (ranks serve V-1 or V meanwhile)
  uint64_t generationReads = 0;    // passes over live shards, all ranks
  uint64_t readsDuringUpdate = 0;  // of those, while the update was in flight
  uint64_t tornReads = 0;          // passes that saw a mix (the step fails)
};

struct JoinRecord {
  int step = -1;             // the first update the joining engine takes part in
  int version = -1;          // the READY version it pulled under a lease
  double seconds = 0;        // slowest joining rank: lease, pull, bit-exact check
  double pullSeconds = 0;    // of which the lease and the reads (slowest rank)
  double othersSeconds = 0;  // the other engines' update in that step, meanwhile
  uint64_t bytes = 0;        // read from the store, all joining ranks
  std::vector<int> ranks;
};

struct ExecReport {
  uint64_t shadowBytes = 0;  // all ranks: the switch's second copy of the shard
  std::vector<SwitchStep> switches;
  JoinRecord join;
};

// The records behind the report, through the run's key-value store: each
// rank publishes its own, rank 0 adds every rank's up into `report`.
//
// A rank's switch of `step` (pause and `at` are 0 where it switched
// nothing); fails with kDataLoss when its generation read a torn shard.
Status publishSwitch(Store& store, int step, int rank, double pauseSeconds, double atSeconds,
                     const GenerationStats& g, uint64_t shadowBytes);
Status gatherSwitches(Store& store, int step, int world, double timeoutSeconds, ExecReport& report);
// A rank's verification of `step` ("ok" or the error), then every rank's:
// kDataLoss naming the first rank whose shard is not bit-exact.
Status publishVerified(Store& store, int step, int rank, const Status& verified);
Status gatherVerified(Store& store, int step, int world, double timeoutSeconds);
// A joining rank's pull (seconds: with the check; pullSeconds: without).
Status publishJoin(Store& store, int step, int rank, double seconds, double pullSeconds,
                   uint64_t bytes, uint64_t version);
// An inference rank's transfer window in the join step (steady-clock seconds).
Status publishWindow(Store& store, int step, int rank, double tStart, double tEnd);
// `ranks` joined; `others` are the other engines' ranks.
Status gatherJoin(Store& store, int step, const std::vector<int>& ranks,
                  const std::vector<int>& others, double timeoutSeconds, ExecReport& report);

}  // namespace tide::exec
