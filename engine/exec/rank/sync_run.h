#pragma once
// Drives RankExecutor over K weight updates, either for the calling rank of
// a multi-process run (runRank) or for every rank as threads of this process
// (runThreads, used by tests and `tide sync --ranks threads`). Step times are
// taken across all ranks: from the earliest end of the pause barrier to the
// latest end of a transfer (steady clock, shared by the processes of a host).

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/kv_store.h"
#include "engine/exec/rank/rank_executor.h"
#include "engine/transport/registry.h"

namespace tide::exec {

struct StepStats {
  int step = 0;
  double seconds = 0;        // transfer, all ranks
  double verifySeconds = 0;  // slowest rank's verification
  // Device memory: the slowest rank's D2H of its training shard and H2D of
  // its inference shard, both inside `seconds`.
  double stageOutSeconds = 0, stageInSeconds = 0;
  uint64_t verifiedBytes = 0;  // inference bytes checked bit-exact (sum over ranks)
  uint64_t bytes = 0;          // bytes that crossed ranks (sum over senders)
  uint64_t localBytes = 0;     // bytes copied / converted on a rank
  uint64_t fullBytes = 0;      // what a full update of the same data moves (= bytes for full)
  uint64_t bytesRead = 0;      // disk-delta: bytes read back by inference ranks
  uint64_t elements = 0, changed = 0;  // sparse / disk-delta: elements encoded, changed
};

// Every rank's set-up (the plan's register steps, performed): rank 0 of
// runRank fills it.
struct SetupStats {
  std::vector<SetupWork> ranks;  // by rank
};

struct RankRunOptions {
  ExecOptions exec;
  int steps = 1;
  // Processes: ranks != 0 hand their events to rank 0 through the store.
  bool gatherEvents = false;
  // runThreads: wraps each rank's transport (tests: fault injection).
  std::function<std::unique_ptr<transport::Transport>(std::unique_ptr<transport::Transport>, int)>
      wrapTransport;
  // runThreads: where runRank notes (nowSeconds) when its step failed, before
  // the executor drops its regions, so the cause can be told from what it caused.
  double* failedAt = nullptr;
  // Where rank 0 puts every rank's set-up; null: not gathered.
  SetupStats* setup = nullptr;
};

// Runs `steps` updates as the transport's rank. Rank 0 gets the aggregated
// stats (and, with gatherEvents, every rank's events in `events`); the other
// ranks get stats of their own part only.
Result<std::vector<StepStats>> runRank(const plan::TransferPlan& plan,
                                       const std::vector<RankLayout>& layouts,
                                       const workloads::SyntheticWeights& weights,
                                       transport::Transport& transport, Store& store,
                                       const RankRunOptions& options, traces::EventSink* events);

// Every rank as a thread of this process on `config.backend` (config.rank,
// worldSize and store are filled in). Returns rank 0's stats or the first error.
Result<std::vector<StepStats>> runThreads(const plan::TransferPlan& plan,
                                          const workloads::SyntheticWeights& weights,
                                          transport::TransportConfig config,
                                          const RankRunOptions& options, traces::EventSink* events);

}  // namespace tide::exec
