#pragma once
// What an update path is run with and reports, and which path it is: the
// options a rank's executor passes down (engine/exec/rank/rank_executor.h)
// and the counters of one rank's step. Here, with the update paths, so
// that they read them without the executor (update/ never includes rank/).

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "engine/core/status.h"
#include "engine/exec/executor/device_shards.h"
#include "engine/exec/executor/exec_hooks.h"
#include "engine/exec/executor/exec_report.h"
#include "engine/exec/executor/shard_source.h"
#include "engine/exec/weight_store/store_path.h"

namespace tide::exec {

// How an update reaches the inference shards (the plan says what goes where).
enum class UpdateMode {
  kFull,       // one-sided writes of the bytes (broadcast, p2p)
  kSparse,     // p2p writes of delta blocks, applied by the target (sparse_path.h)
  kDiskDelta,  // delta files in a shared directory (disk_delta_path.h)
  kStore,      // versioned snapshots in the ranks' store segments (store_path.h)
};

struct ExecOptions {
  double timeoutSeconds = 120;  // a step that makes no progress for this long fails
  // Tests only (exec_hooks.h): poisoned targets, a corrupted shard.
  std::shared_ptr<const ExecHooks> hooks;
  UpdateMode mode = UpdateMode::kFull;
  std::string deltaDir;    // kDiskDelta: the shared directory
  uint32_t baseEvery = 8;  // kDiskDelta: a full base every K versions
  StorePathOptions store;  // kStore (its timeout is timeoutSeconds)
  // Asynchronous update (kFull on a p2p plan, kStore): inference ranks
  // receive into a shadow copy while emulated generation reads the live
  // one, and switch once every rank verified (version_switch.h).
  bool shadowSwitch = false;
  double generationIntervalSeconds = 0.001;  // between generation passes
  ExecReport* report = nullptr;              // rank 0 fills it (switch, join)
  // Resuming in a long-lived process (the soak driver's epochs: a new
  // transport and executor after a failed update): the run starts at this
  // version (full and store updates only) ...
  int startVersion = 0;
  // ... and an inference rank's shard is `resumeShard` (its live copy from
  // before, the layout's bytes); null: the rank loads startVersion from its
  // checkpoint (the generator), as a restarted engine does. A store run
  // loads startVersion from the store either way.
  const uint8_t* resumeShard = nullptr;
  // Asked once every rank verified a step, before this rank commits it:
  // false abandons the step (kCancelled) and the version switch keeps the
  // previous version live. Lets a supervisor make commit all-or-nothing.
  std::function<Result<bool>(int step)> commitGate;
  // Polled while the transfer waits: true ends the step (kCancelled).
  std::function<bool()> aborted;
  // Shards in device memory (device_shards.h; full updates, in place):
  // called once at set-up with the run's weights and the rank's index, it
  // gives the memory the rank's training and inference shards live in; the
  // registered host buffers become their staging replicas. Null: the shards
  // are the host buffers themselves.
  ShardMemoryFactory shardMemory;
  gpu::StagingOptions staging;  // with shardMemory: per tensor or bucketed
  // The shards' contents from the caller instead of the generator
  // (shard_source.h; full updates in host memory). Must outlive the run.
  ShardSource* shardSource = nullptr;
};

struct RankStep {
  int step = 0;
  double tStart = 0;  // steady-clock seconds at the end of the pause barrier
  double tEnd = 0;    // when this rank's last transfer finished
  double verifySeconds = 0;
  // Shards in device memory: this rank's D2H before its sends and H2D after
  // its receives (inside tStart..tEnd; 0 where the shards are host memory).
  double stageOutSeconds = 0, stageInSeconds = 0;
  uint64_t bytesVerified = 0;  // inference-shard bytes checked against the generator
  uint64_t bytesSent = 0;      // non-local bytes this rank sent
  uint64_t bytesLocal = 0;
  uint64_t bytesFull = 0;  // what a full update of the same data moves (sparse / disk-delta)
  uint64_t bytesRead = 0;  // disk-delta: bytes read from files; store: from the store
  uint64_t elements = 0, changed = 0;  // sparse / disk-delta: elements encoded, changed
};

}  // namespace tide::exec
