#pragma once
// Runs one rank's part of a weight-sync plan on a transport, step after step:
//
//   setup:   lay out and allocate the rank's buffers (train shard, staging
//            replica, inference shard, bucket buffers), register each once,
//            publish the descriptors through the store and import the peers'.
//   step k:  trainers materialize version k of their shards from the seeded
//            generator (outside the timed part), then
//            pause (barrier) -> transfer -> verify -> bump version -> resume.
//
// The transfer is the update path's (update_path.h: full, sparse,
// disk-delta, store), so this type knows no mode. Verification recomputes,
// independently of the transfer, the XXH3 of every inference block from the
// generator and names the first block that differs.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/core/kv_store.h"
#include "engine/core/status.h"
#include "engine/exec/executor/rank_layout.h"
#include "engine/exec/executor/rank_schedule.h"
#include "engine/exec/executor/shard_content.h"
#include "engine/exec/executor/shard_home.h"
#include "engine/exec/executor/version_switch.h"
#include "engine/exec/update/update_options.h"
#include "engine/exec/update/update_path.h"
#include "engine/plan/transfer_plan.h"
#include "engine/transport/registration.h"
#include "engine/transport/transport.h"
#include "traces/event.h"
#include "workloads/weights.h"

namespace tide::exec {

// What a rank did before its first update (the plan's register steps):
// its buffers pinned and registered with the transport, timed.
struct SetupWork {
  uint32_t registrations = 0;    // regions registered (one per space held, and a shadow)
  uint64_t registeredBytes = 0;  // bytes of them
  double registerSeconds = 0;    // inside the transport's registerRegion calls
};

class RankExecutor final : private UpdateHost {
 public:
  // `plan`, `layouts`, `weights`, `transport`, `store` must outlive this.
  // The store should be private to this run (a PrefixStore).
  static Result<std::unique_ptr<RankExecutor>> create(const plan::TransferPlan& plan,
                                                      const std::vector<RankLayout>& layouts,
                                                      const workloads::SyntheticWeights& weights,
                                                      transport::Transport& transport, Store& store,
                                                      ExecOptions options);
  ~RankExecutor() override;

  // Runs update `step` (1, 2, ...): the inference shards go from version
  // step-1 to step. Fails on any transfer error or a block that does not
  // verify, on any rank (all ranks return the error).
  Result<RankStep> runStep(int step, traces::EventSink* events);

  int version() const { return version_; }
  // The complete version this rank's generation serves (-1: none yet).
  // Without a switch, the shard's version after the last update.
  ServedVersion serving() const;
  // Whether this rank's inference shard holds exactly `version` (kDataLoss
  // naming the first block that does not). Tests: no rank ends on a mix.
  Status checkVersion(int version) const {
    return home_->verifyInfer(version, spaces_[kInferSpace].data()).status();
  }
  const RankSchedule& schedule() const { return schedule_; }
  const SetupWork& setupWork() const { return setupWork_; }
  // The inference shard generation reads (empty on a trainer).
  std::span<const uint8_t> liveShard() const;
  // What emulated generation read since the executor started (switch only).
  GenerationStats generationTotals();

 private:
  RankExecutor(const plan::TransferPlan& plan, const std::vector<RankLayout>& layouts,
               const workloads::SyntheticWeights& weights, transport::Transport& transport,
               Store& store, ExecOptions options);
  Status setup();
  Status registerSpaces();
  Status checkSwitch() const;
  void setupSwitch();
  // The steps after every rank verified: the gate, the version, the switch.
  Status commit(int step, RankStep& out);
  // Allocates and registers `bytes`, the registration timed into setupWork_.
  Result<transport::Registration> registerTimed(uint64_t bytes);
  void switchCopies();
  static constexpr int kInferSpace = static_cast<int>(plan::Space::kInfer);
  // The inference shard an update writes: the shadow while a switch update runs.
  uint8_t* buffer(plan::Space s) const {
    if (s == plan::Space::kInfer && switch_ && switch_->updating()) return inferShadow_.data();
    return spaces_[static_cast<int>(s)].data();
  }

  // UpdateHost
  Buffers buffers() override;
  uint32_t region(plan::Space s) const override { return spaces_[static_cast<int>(s)].id(); }
  uint32_t inferTargetRegion() const override {
    return switch_ ? inferShadow_.id() : spaces_[kInferSpace].id();
  }
  Status materializeTrain(int version) override;
  Result<uint64_t> trainReady() override { return home_->trainReady(); }
  Status loadStart() override;
  Result<uint64_t> verifyTarget(int version) const override {
    return home_->verifyInfer(version, buffer(plan::Space::kInfer));
  }
  // The test hooks' look at the inference shard the transfer wrote.
  void afterTransfer(int step);
  void beginJoin() override;
  Status finishJoin(int version) override;
  double epoch() const override { return epoch_; }

  const plan::TransferPlan& plan_;
  const std::vector<RankLayout>& layouts_;
  const workloads::SyntheticWeights& weights_;
  transport::Transport& transport_;
  Store& store_;
  ExecOptions options_;
  int rank_;
  int version_ = 0;
  double epoch_ = 0;      // rank 0's steady clock at setup: events are relative to it
  plan::Schedule units_;  // the plan's schedule; schedule_ is this rank's share
  RankSchedule schedule_;
  SetupWork setupWork_;
  transport::Registration spaces_[kSpaceCount];  // the rank's buffers, registered
  std::unique_ptr<UpdatePath> update_;
  // Where the shards live: the spaces themselves, or device memory whose
  // staging replicas they are (ExecOptions::shardMemory). Before the spaces go.
  std::unique_ptr<ShardHome> home_;
  // Switch: the second copy of the inference shard (spaces_[kInfer] is the
  // live one; they trade places at each switch).
  transport::Registration inferShadow_;
  bool startPoisoned_ = false;             // loadStart() wrote the poison pattern
  bool serving_ = true;                    // false for a joining rank until it joined
  GenerationStats generated_;              // taken from the switch so far
  std::unique_ptr<VersionSwitch> switch_;  // last: its reader stops before the copies go
};

}  // namespace tide::exec
