#pragma once
// The device operations an executor needs to keep a rank's shards in device
// memory: allocate a shard, fill it from the seeded generator, stage it to
// and from a host replica (per tensor or bucketed), and checksum it. Two
// implementations:
//   * CUDA (cuda_shard_memory.h, TIDE_WITH_CUDA): cudaMalloc, DeviceGenerator,
//     copyPerTensor / BucketedCopy into a cudaHostRegister'ed replica,
//     deviceXxh3;
//   * host (host_shard_memory.h): the same operations on separate host
//     memory, in the same order, so the executor's device-memory path
//     (staging, ordering, verification, errors) runs and is tested without
//     a GPU.
// CUDA-free: the executor includes it on every build.

#include <cstdint>
#include <memory>
#include <span>

#include "engine/core/status.h"
#include "engine/gpu/staging_plan.h"
#include "workloads/box.h"

namespace tide::gpu {

// Memory of one shard, wherever the implementation keeps it; released on
// destruction. Only the ShardMemory that allocated it may touch it.
class ShardBuffer {
 public:
  virtual ~ShardBuffer() = default;
  virtual uint64_t size() const = 0;
};

// Host memory made ready for staging copies (page-locked on CUDA), for as
// long as this lives. The memory must outlive it.
class HostPin {
 public:
  virtual ~HostPin() = default;
};

struct StagingOptions {
  uint64_t bucketBytes = 0;  // 0: one copy and one wait per tensor; else bucketed
  int streams = 2;           // bucketed: copy streams
};

// What one staging pass did.
struct StageStats {
  uint64_t bytes = 0;
  uint64_t copies = 0;   // copies issued (bucketed: adjacent ranges merged)
  uint64_t buckets = 0;  // waits: one per tensor, or one per bucket
};

// A byte range of a shard.
struct ShardRange {
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

// A staging pass under way (ShardMemory::startStage): its tensors land in
// the order given, and a caller may use those that have while the rest
// copy (the sender writes bucket k while later buckets are still in D2H).
// Destroying it waits for copies in flight: the memory they touch may be
// freed next.
class StagingJob {
 public:
  virtual ~StagingJob() = default;
  // How many tensors, counted from the first, have landed; never blocks.
  virtual Result<size_t> landed() = 0;
  // Waits until every tensor has landed; what the pass did.
  virtual Result<StageStats> finish() = 0;
};

// A pass with nothing left in flight (done, or nothing to do).
std::unique_ptr<StagingJob> finishedStagingJob(const StageStats& stats, size_t tensors);

class ShardMemory {
 public:
  virtual ~ShardMemory() = default;
  // "cuda" or "host".
  virtual const char* kind() const = 0;
  virtual Result<std::unique_ptr<ShardBuffer>> allocate(uint64_t bytes) = 0;
  virtual Result<std::unique_ptr<HostPin>> pin(uint8_t* host, uint64_t bytes) = 0;
  // Writes version `version` of `box` of `tensor` (bf16, row-major in the
  // box, the generator's bits) at `offset` of `dst`.
  [[nodiscard]] virtual Status fill(ShardBuffer& dst, uint64_t offset, uint32_t tensor,
                                    const workloads::Box& box, int version) = 0;
  // Starts copying every tensor between `shard` (deviceOffset) and `host`
  // (hostOffset). Per tensor (options.bucketBytes 0), as an RL framework's
  // loop does, every copy is waited for here and the job returns finished;
  // bucketed, buckets land while the caller goes on. `shard`, `host` and
  // `tensors` must outlive the job.
  virtual Result<std::unique_ptr<StagingJob>> startStage(CopyDirection dir, ShardBuffer& shard,
                                                         uint8_t* host,
                                                         std::span<const StagedTensor> tensors,
                                                         const StagingOptions& options) = 0;
  // startStage, waited for.
  Result<StageStats> stage(CopyDirection dir, ShardBuffer& shard, uint8_t* host,
                           std::span<const StagedTensor> tensors, const StagingOptions& options);
  // XXH3-64 of the concatenation of `ranges` of `src`, in order: equal to
  // XXH3_64bits of the same bytes on the host.
  virtual Result<uint64_t> checksum(const ShardBuffer& src, std::span<const ShardRange> ranges) = 0;
};

// Rejects ranges and tensors outside a shard of `shardBytes` (kOutOfRange).
Status checkRanges(std::span<const ShardRange> ranges, uint64_t shardBytes);
Status checkStaged(std::span<const StagedTensor> tensors, uint64_t shardBytes);

}  // namespace tide::gpu
