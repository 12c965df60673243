#include "engine/exec/executor/device_shards.h"

#include <algorithm>
#include <string>

#include "engine/core/clock.h"
#include "engine/exec/executor/fp8_blocks.h"
#include "engine/exec/executor/shard_digest.h"

namespace tide::exec {

using plan::Space;

namespace {

// Every placed block of `s`, at the same offset on both sides.
std::vector<gpu::StagedTensor> blocksOf(const RankLayout& layout, Space s) {
  std::vector<gpu::StagedTensor> out;
  for (const Placed& p : layout.placed(s)) out.push_back({p.offset, p.offset, p.bytes});
  return out;
}

}  // namespace

Result<std::unique_ptr<DeviceShards>> DeviceShards::create(
    std::unique_ptr<gpu::ShardMemory> memory, const workloads::SyntheticWeights& weights,
    const RankLayout& layout, int rank, uint8_t* hostTrain, uint8_t* hostInfer,
    const gpu::StagingOptions& staging) {
  if (!memory) return TIDE_ERROR(Code::kInvalidArgument, "device shards: no shard memory");
  if (staging.streams < 1) {
    return TIDE_ERROR(Code::kInvalidArgument, "device shards: staging needs a stream");
  }
  for (const Placed& p : layout.placed(Space::kTrain)) {
    if (p.dtype != workloads::DType::kBF16) {
      return TIDE_ERROR(Code::kUnimplemented, "exec: training shards must be bf16");
    }
  }
  std::unique_ptr<DeviceShards> d(
      new DeviceShards(std::move(memory), weights, layout, rank, staging));
  const uint64_t trainBytes = layout.spaceBytes(Space::kTrain);
  const uint64_t inferBytes = layout.spaceBytes(Space::kInfer);
  if ((trainBytes > 0 && !hostTrain) || (inferBytes > 0 && !hostInfer)) {
    return TIDE_ERROR(Code::kInvalidArgument, "device shards: a host staging buffer is missing");
  }
  d->hostTrain_ = hostTrain;
  d->hostInfer_ = hostInfer;
  if (trainBytes > 0) {
    TIDE_ASSIGN_OR_RETURN(d->train_, d->memory_->allocate(trainBytes));
    TIDE_ASSIGN_OR_RETURN(d->trainPin_, d->memory_->pin(hostTrain, trainBytes));
    d->trainTensors_ = blocksOf(layout, Space::kTrain);
    d->readyBelow_.assign(d->trainTensors_.size() + 1, kAllStaged);
    for (size_t k = d->trainTensors_.size(); k-- > 0;) {
      d->readyBelow_[k] = std::min(d->readyBelow_[k + 1], d->trainTensors_[k].hostOffset);
    }
  }
  if (inferBytes > 0) {
    TIDE_ASSIGN_OR_RETURN(d->infer_, d->memory_->allocate(inferBytes));
    TIDE_ASSIGN_OR_RETURN(d->inferPin_, d->memory_->pin(hostInfer, inferBytes));
    d->inferTensors_ = blocksOf(layout, Space::kInfer);
  }
  return d;
}

Status DeviceShards::fillTrain(int version) {
  for (const Placed& p : layout_.placed(Space::kTrain)) {
    TIDE_RETURN_IF_ERROR(memory_->fill(*train_, p.offset, p.tensor, p.box.toBox(), version));
  }
  return Status::ok();
}

Status DeviceShards::startStageOut() {
  // A step that failed may have left its copy running: dropping it waits.
  out_.reset();
  outStart_ = outEnd_ = nowSeconds();
  if (!train_) return Status::ok();
  TIDE_ASSIGN_OR_RETURN(out_, memory_->startStage(gpu::CopyDirection::kDeviceToHost, *train_,
                                                  hostTrain_, trainTensors_, staging_));
  return Status::ok();
}

Result<uint64_t> DeviceShards::trainReady() {
  if (!out_) return kAllStaged;
  TIDE_ASSIGN_OR_RETURN(const size_t k, out_->landed());
  if (k >= trainTensors_.size()) {
    TIDE_RETURN_IF_ERROR(finishStageOut());
    return kAllStaged;
  }
  return readyBelow_[k];
}

Status DeviceShards::finishStageOut() {
  if (!out_) return Status::ok();
  Status st = out_->finish().status();
  out_.reset();
  outEnd_ = nowSeconds();
  return st;
}

Status DeviceShards::afterTransfer() {
  TIDE_RETURN_IF_ERROR(finishStageOut());
  return stageIn().status();
}

Result<gpu::StageStats> DeviceShards::stageIn() {
  if (!infer_) return gpu::StageStats{};
  const double t0 = nowSeconds();
  auto st = memory_->stage(gpu::CopyDirection::kHostToDevice, *infer_, hostInfer_, inferTensors_,
                           staging_);
  inSeconds_ = nowSeconds() - t0;
  return st;
}

Result<uint64_t> DeviceShards::verifyInfer(int version) const {
  uint64_t checked = 0;
  for (const Placed& p : layout_.placed(Space::kInfer)) {
    const gpu::ShardRange r{p.offset, p.bytes};
    TIDE_ASSIGN_OR_RETURN(uint64_t got, memory_->checksum(*infer_, {&r, 1}));
    TIDE_ASSIGN_OR_RETURN(uint64_t want, expectedChecksum(weights_, p, version));
    if (got != want) {
      return TIDE_ERROR(Code::kDataLoss, "verify: rank " + std::to_string(rank_) + " " +
                                             weights_.inventory().tensors[p.tensor].name + " " +
                                             p.box.toString() + " is not version " +
                                             std::to_string(version) + " in " + kind() +
                                             " memory (xxh3 " + std::to_string(got) +
                                             ", expected " + std::to_string(want) + ")");
    }
    checked += p.bytes;
  }
  return checked;
}

Result<uint64_t> DeviceShards::inferDigest() const {
  if (!infer_) return shardDigest(layout_, nullptr);
  return shardDigest(layout_, *memory_, *infer_);
}

Result<std::unique_ptr<gpu::ShardMemory>> openShardMemory(
    const ShardMemoryFactory& factory, const workloads::SyntheticWeights& weights, int rank) {
  if (!factory) return std::unique_ptr<gpu::ShardMemory>();
  auto m = factory(weights, rank);
  if (!m.isOk()) {
    return TIDE_ERROR(Code::kFailedPrecondition, "device memory on rank " + std::to_string(rank) +
                                                     ": " + m.status().message());
  }
  return std::move(*m);
}

Result<std::unique_ptr<ShardHome>> makeShardHome(std::unique_ptr<gpu::ShardMemory> memory,
                                                 const workloads::SyntheticWeights& weights,
                                                 const RankLayout& layout, int rank,
                                                 uint8_t* hostTrain, uint8_t* hostInfer,
                                                 const gpu::StagingOptions& staging) {
  if (!memory) return makeHostShardHome(weights, layout, rank);
  TIDE_ASSIGN_OR_RETURN(auto d, DeviceShards::create(std::move(memory), weights, layout, rank,
                                                     hostTrain, hostInfer, staging));
  return std::unique_ptr<ShardHome>(std::move(d));
}

}  // namespace tide::exec
