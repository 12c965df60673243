#pragma once
// Shard memory kept in ordinary host memory: the executor's device-memory
// path without a device. Every operation does what the CUDA implementation
// does, in the same order (per tensor: a copy and a wait each; bucketed:
// the same bucket bounds and merged copies), with memcpy and the host
// generator; checksums are XXH3_64bits. What it cannot show is the speed
// or the asynchrony of a GPU.

#include <memory>

#include "engine/gpu/shard_memory.h"
#include "workloads/weights.h"

namespace tide::gpu {

// `weights` must outlive the result.
std::unique_ptr<ShardMemory> makeHostShardMemory(const workloads::SyntheticWeights& weights);

}  // namespace tide::gpu
