#pragma once
// What a staging copy between a shard and its host replica consists of,
// independent of where the shard lives: the tensors' ranges on both sides,
// how consecutive tensors form buckets, and which ranges merge into one
// copy. CUDA-free, so the host implementation of shard memory
// (host_shard_memory.h) stages in exactly the order the CUDA one does.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace tide::gpu {

enum class CopyDirection { kDeviceToHost, kHostToDevice };

struct StagedTensor {
  uint64_t deviceOffset = 0;
  uint64_t hostOffset = 0;
  uint64_t bytes = 0;
};

// Index of each bucket's first tensor, then tensors.size(): a bucket closes
// once it holds >= bucketBytes (a larger tensor is a bucket of its own).
std::vector<size_t> bucketBounds(std::span<const StagedTensor> tensors, uint64_t bucketBytes);

// The copies of tensors [begin, end): ranges adjacent on both sides merged.
std::vector<StagedTensor> mergedCopies(std::span<const StagedTensor> tensors);

}  // namespace tide::gpu
