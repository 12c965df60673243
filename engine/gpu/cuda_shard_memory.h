#pragma once
// Shard memory on a CUDA device (shard_memory.h): shards from cudaMalloc,
// filled by DeviceGenerator, staged with copyPerTensor or BucketedCopy into
// host memory page-locked by cudaHostRegister, checksummed by deviceXxh3.
// Every call first makes `device` current (a rank may run as a thread).

#include <memory>

#include "engine/core/status.h"
#include "engine/gpu/shard_memory.h"
#include "workloads/weights.h"

namespace tide::gpu {

// kUnavailable "no CUDA device" where there is none; kInvalidArgument for a
// device index the machine does not have. `weights` must outlive the result.
Result<std::unique_ptr<ShardMemory>> makeCudaShardMemory(const workloads::SyntheticWeights& weights,
                                                         int device);

}  // namespace tide::gpu
