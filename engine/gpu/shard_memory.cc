#include "engine/gpu/shard_memory.h"

#include <string>

namespace tide::gpu {

namespace {

Status outside(const char* what, uint64_t offset, uint64_t bytes, uint64_t shardBytes) {
  return TIDE_ERROR(Code::kOutOfRange, std::string(what) + " [" + std::to_string(offset) + ", +" +
                                           std::to_string(bytes) + ") outside a shard of " +
                                           std::to_string(shardBytes) + " bytes");
}

bool fits(uint64_t offset, uint64_t bytes, uint64_t size) {
  return offset <= size && bytes <= size - offset;
}

class FinishedJob final : public StagingJob {
 public:
  FinishedJob(const StageStats& stats, size_t tensors) : stats_(stats), tensors_(tensors) {}
  Result<size_t> landed() override { return tensors_; }
  Result<StageStats> finish() override { return stats_; }

 private:
  StageStats stats_;
  size_t tensors_;
};

}  // namespace

std::unique_ptr<StagingJob> finishedStagingJob(const StageStats& stats, size_t tensors) {
  return std::make_unique<FinishedJob>(stats, tensors);
}

Result<StageStats> ShardMemory::stage(CopyDirection dir, ShardBuffer& shard, uint8_t* host,
                                      std::span<const StagedTensor> tensors,
                                      const StagingOptions& options) {
  TIDE_ASSIGN_OR_RETURN(auto job, startStage(dir, shard, host, tensors, options));
  return job->finish();
}

Status checkRanges(std::span<const ShardRange> ranges, uint64_t shardBytes) {
  for (const ShardRange& r : ranges) {
    if (!fits(r.offset, r.bytes, shardBytes))
      return outside("range", r.offset, r.bytes, shardBytes);
  }
  return Status::ok();
}

Status checkStaged(std::span<const StagedTensor> tensors, uint64_t shardBytes) {
  for (const StagedTensor& t : tensors) {
    if (!fits(t.deviceOffset, t.bytes, shardBytes)) {
      return outside("staged tensor", t.deviceOffset, t.bytes, shardBytes);
    }
  }
  return Status::ok();
}

}  // namespace tide::gpu
