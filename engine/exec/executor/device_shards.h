#pragma once
// A rank's training and inference shards in shard memory (ExecOptions::
// shardMemory: device memory, or host memory standing in for it in tests),
// as a GPU rank of an RL job holds them. The rank's registered host buffers
// of the same spaces become the staging replicas the transport reads and
// writes, at the same offsets:
//
//   trainer:    fillTrain (the generator, on the device) ... stageOut (D2H
//               into the registered train buffer) -> the transfer
//   inference:  the transfer -> stageIn (H2D from the registered infer
//               buffer) -> verifyInfer (checksums on the device against
//               the generator's, per placed block)
//
// The host buffers are pinned (cudaHostRegister) for as long as this lives.

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/core/status.h"
#include "engine/exec/executor/rank_layout.h"
#include "engine/gpu/shard_memory.h"
#include "workloads/weights.h"

namespace tide::exec {

class DeviceShards {
 public:
  // `hostTrain` / `hostInfer`: the rank's registered buffers of those spaces
  // (null where the rank holds none); they and `layout` must outlive this.
  static Result<std::unique_ptr<DeviceShards>> create(std::unique_ptr<gpu::ShardMemory> memory,
                                                      const RankLayout& layout, uint8_t* hostTrain,
                                                      uint8_t* hostInfer,
                                                      const gpu::StagingOptions& staging);

  // Version `version` of every training block, written where the shard is.
  [[nodiscard]] Status fillTrain(int version);
  // The training shard into the host train buffer (D2H), waited for.
  Result<gpu::StageStats> stageOut();
  // The host infer buffer into the inference shard (H2D), waited for.
  Result<gpu::StageStats> stageIn();
  // As verifyInferShard, on the inference shard where it lives.
  Result<uint64_t> verifyInfer(const workloads::SyntheticWeights& weights, int rank,
                               int version) const;
  // shardDigest of the inference shard, computed where it lives.
  Result<uint64_t> inferDigest() const;
  const char* kind() const { return memory_->kind(); }

 private:
  DeviceShards(std::unique_ptr<gpu::ShardMemory> memory, const RankLayout& layout,
               const gpu::StagingOptions& staging)
      : memory_(std::move(memory)), layout_(layout), staging_(staging) {}

  std::unique_ptr<gpu::ShardMemory> memory_;
  const RankLayout& layout_;
  gpu::StagingOptions staging_;
  uint8_t* hostTrain_ = nullptr;
  uint8_t* hostInfer_ = nullptr;
  // Members after memory_: released before it.
  std::unique_ptr<gpu::ShardBuffer> train_, infer_;
  std::unique_ptr<gpu::HostPin> trainPin_, inferPin_;
  std::vector<gpu::StagedTensor> trainTensors_, inferTensors_;  // the placed blocks
};

}  // namespace tide::exec
