#pragma once
// A rank's training and inference shards in shard memory (ExecOptions::
// shardMemory: device memory, or host memory standing in for it in tests),
// as a GPU rank of an RL job holds them. The rank's registered host buffers
// of the same spaces become the staging replicas the transport reads and
// writes, at the same offsets:
//
//   trainer:    fillTrain (the generator, on the device) ... D2H into the
//               registered train buffer, started before the transfer;
//               bucketed, the transfer sends what has landed (trainReady)
//               while later buckets still copy
//   inference:  the transfer -> stageIn (H2D from the registered infer
//               buffer) -> verifyInfer (checksums on the device against
//               the generator's, per placed block)
//
// The host buffers are pinned (cudaHostRegister) for as long as this lives.

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "engine/core/status.h"
#include "engine/exec/executor/rank_layout.h"
#include "engine/exec/executor/shard_home.h"
#include "engine/gpu/shard_memory.h"
#include "workloads/weights.h"

namespace tide::exec {

class DeviceShards final : public ShardHome {
 public:
  // `hostTrain` / `hostInfer`: the rank's registered buffers of those spaces
  // (null where the rank holds none); they and `layout` must outlive this.
  static Result<std::unique_ptr<DeviceShards>> create(std::unique_ptr<gpu::ShardMemory> memory,
                                                      const workloads::SyntheticWeights& weights,
                                                      const RankLayout& layout, int rank,
                                                      uint8_t* hostTrain, uint8_t* hostInfer,
                                                      const gpu::StagingOptions& staging);

  // Version `version` of every training block, written where the shard is.
  [[nodiscard]] Status fillTrain(int version);
  // Starts the training shard's D2H into the host train buffer.
  [[nodiscard]] Status startStageOut();
  // The leading bytes of the host train buffer that hold the shard so far.
  Result<uint64_t> trainReady() override;
  // Waits for the D2H started last.
  [[nodiscard]] Status finishStageOut();
  // The host infer buffer into the inference shard (H2D), waited for.
  Result<gpu::StageStats> stageIn();
  // As verifyInferShard, on the inference shard where it lives.
  Result<uint64_t> verifyInfer(int version) const;
  // shardDigest of the inference shard, computed where it lives.
  Result<uint64_t> inferDigest() const;
  const char* kind() const { return memory_->kind(); }

  // ShardHome: the registered buffers are the staging replicas, at the
  // shards' offsets, so the ones passed here are those given to create().
  Status fillTrain(int version, uint8_t*) override { return fillTrain(version); }
  Status beforeTransfer() override { return startStageOut(); }
  Status afterTransfer() override;
  StagingTimes stagingTimes() const override { return {outEnd_ - outStart_, inSeconds_}; }
  Result<uint64_t> verifyInfer(int version, const uint8_t*) const override {
    return verifyInfer(version);
  }

 private:
  DeviceShards(std::unique_ptr<gpu::ShardMemory> memory, const workloads::SyntheticWeights& weights,
               const RankLayout& layout, int rank, const gpu::StagingOptions& staging)
      : memory_(std::move(memory)),
        weights_(weights),
        layout_(layout),
        rank_(rank),
        staging_(staging) {}

  std::unique_ptr<gpu::ShardMemory> memory_;
  const workloads::SyntheticWeights& weights_;
  const RankLayout& layout_;
  int rank_;
  gpu::StagingOptions staging_;
  uint8_t* hostTrain_ = nullptr;
  uint8_t* hostInfer_ = nullptr;
  // Members after memory_: released before it.
  std::unique_ptr<gpu::ShardBuffer> train_, infer_;
  std::unique_ptr<gpu::HostPin> trainPin_, inferPin_;
  std::vector<gpu::StagedTensor> trainTensors_, inferTensors_;  // the placed blocks
  // readyBelow_[k]: the lowest host offset of trainTensors_[k..] (the end:
  // kAllStaged): with k tensors landed, every byte below it has.
  std::vector<uint64_t> readyBelow_;
  // The D2H in flight; declared last, so it is waited for before the
  // memory it copies is released.
  std::unique_ptr<gpu::StagingJob> out_;
  double outStart_ = 0, outEnd_ = 0;  // its start, and when it was seen whole
  double inSeconds_ = 0;              // the last stageIn
};

// ExecOptions::shardMemory: the memory a rank's shards live in.
using ShardMemoryFactory = std::function<Result<std::unique_ptr<gpu::ShardMemory>>(
    const workloads::SyntheticWeights& weights, int rank)>;

// The rank's shard memory, opened before anything is registered (null
// without a factory). A rank without it is the run's cause, not a
// consequence of a peer gone (which is what kUnavailable says in
// runThreads), hence kFailedPrecondition.
Result<std::unique_ptr<gpu::ShardMemory>> openShardMemory(
    const ShardMemoryFactory& factory, const workloads::SyntheticWeights& weights, int rank);

// The rank's shard home: device shards in `memory` staged through the
// registered buffers, or (memory null) the registered buffers themselves.
Result<std::unique_ptr<ShardHome>> makeShardHome(std::unique_ptr<gpu::ShardMemory> memory,
                                                 const workloads::SyntheticWeights& weights,
                                                 const RankLayout& layout, int rank,
                                                 uint8_t* hostTrain, uint8_t* hostInfer,
                                                 const gpu::StagingOptions& staging);

}  // namespace tide::exec
