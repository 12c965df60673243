#pragma once
// UpdatePath: how one update mode moves a version into the inference shards
// (full writes, sparse deltas, delta files, the weight store). The executor
// (rank_executor.h) owns the buffers, the pause/verify/commit protocol and
// the version switch; a path owns what its mode needs besides (inboxes,
// files, store segments) and knows no other mode. Per run:
//
//   setUp    once, after the executor registered and published its buffers:
//            the path's own regions, and the start version in the shards;
//   join     before each step's transfer (a rank that joins at this step
//            pulls the current version first; most paths: nothing);
//   step     this rank's transfer of version `step`;
//   commit   once every rank verified `step` and the executor committed it.

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/kv_store.h"
#include "engine/core/status.h"
#include "engine/exec/executor/rank_layout.h"
#include "engine/exec/executor/rank_schedule.h"
#include "engine/plan/transfer_plan.h"
#include "engine/transport/transport.h"
#include "traces/event.h"
#include "workloads/weights.h"

namespace tide::exec {

struct ExecOptions;
struct RankStep;

// What every path reads of the run (all outlive the path).
struct UpdateEnv {
  const plan::TransferPlan& plan;
  const std::vector<RankLayout>& layouts;
  const workloads::SyntheticWeights& weights;
  transport::Transport& transport;
  Store& store;
  const ExecOptions& options;
  const RankSchedule& schedule;
  int rank = 0;
  traces::EventPath path = traces::EventPath::kUnknown;  // the transport's
};

// What a path asks of the executor that runs it.
class UpdateHost {
 public:
  using Buffers = std::array<uint8_t*, kSpaceCount>;
  virtual ~UpdateHost() = default;
  // The buffers an update writes (the shadow inference shard while a
  // switch update runs) and reads.
  virtual Buffers buffers() = 0;
  // The registered region of space `s` (its live copy).
  virtual uint32_t region(plan::Space s) const = 0;
  // The registered region of buffers()[kInfer].
  virtual uint32_t inferTargetRegion() const = 0;
  // Trainers: version `version` of the training shard, from the generator.
  virtual Status materializeTrain(int version) = 0;
  // How many leading bytes of buffers()[kTrain] an update may read now:
  // all of them, except while a staging copy from device memory still
  // lands (ShardHome::trainReady; ShardHome::kAllStaged when all). Never
  // blocks.
  virtual Result<uint64_t> trainReady() = 0;
  // The inference shard at the run's start version: from the generator (or
  // a poison pattern, tests), or the shard a resumed run held.
  virtual Status loadStart() = 0;
  // The bytes of buffers()[kInfer] checked against `version`, or kDataLoss.
  virtual Result<uint64_t> verifyTarget(int version) const = 0;
  // A joining rank: before its pull, and once buffers()[kInfer] holds
  // `version` (checked here; then served).
  virtual void beginJoin() = 0;
  virtual Status finishJoin(int version) = 0;
  // Rank 0's steady clock at set-up: trace events are relative to it.
  virtual double epoch() const = 0;
};

class UpdatePath {
 public:
  virtual ~UpdatePath() = default;
  // Returns whether this rank serves from the start (a rank that joins
  // later holds nothing until it joined).
  virtual Result<bool> setUp(UpdateHost& host) = 0;
  virtual Status join(int step, UpdateHost& host) {
    (void)step;
    (void)host;
    return Status::ok();
  }
  virtual Status step(int step, UpdateHost& host, traces::EventSink* events, RankStep& out) = 0;
  virtual Status commit(int step, UpdateHost& host, const RankStep& out) {
    (void)step;
    (void)host;
    (void)out;
    return Status::ok();
  }
};

// Store keys under which each rank publishes the descriptor of its space
// `space` and of its second inference copy (switch).
std::string regionKey(int rank, int space);
std::string shadowKey(int rank);

// The trace path of a transport backend ("tcp", ...).
traces::EventPath eventPathOf(const std::string& backend);

// What only some modes take (a later start version, a version switch):
// kInvalidArgument for the others.
Status checkUpdateOptions(const ExecOptions& options);

// The path of env.options.mode.
Result<std::unique_ptr<UpdatePath>> makeUpdatePath(const UpdateEnv& env);
// One per mode, each in its own file.
Result<std::unique_ptr<UpdatePath>> makeFullUpdate(const UpdateEnv& env);
Result<std::unique_ptr<UpdatePath>> makeSparseUpdate(const UpdateEnv& env);
Result<std::unique_ptr<UpdatePath>> makeDiskDeltaUpdate(const UpdateEnv& env);
Result<std::unique_ptr<UpdatePath>> makeStoreUpdate(const UpdateEnv& env);

// One trace event for the rank's whole step, for paths whose traffic is not
// one (src, dst) pair (files, the store); none when the rank moved nothing.
Status rankEvent(const UpdateEnv& env, const UpdateHost& host, traces::EventSink* events, int step,
                 double t0, uint64_t bytes, traces::EventPath path);

}  // namespace tide::exec
