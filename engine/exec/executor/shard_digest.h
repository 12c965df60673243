#pragma once
// One number for what an inference rank holds: the XXH3 of its placed
// blocks' bytes, in layout order (padding between blocks is left out, so a
// shard that was poisoned before it was loaded digests the same). A
// supervisor compares a rank's digest with the digest of a version computed
// from the generator on its own, independently of the executor that moved
// the bytes: equal to version V or V-1 is a whole version, anything else is
// torn or mixed.

#include <cstdint>

#include "engine/core/status.h"
#include "engine/exec/executor/rank_layout.h"
#include "engine/gpu/shard_memory.h"
#include "workloads/weights.h"

namespace tide::exec {

// `shard` is the rank's inference buffer (layout.spaceBytes(kInfer) bytes).
uint64_t shardDigest(const RankLayout& layout, const uint8_t* shard);
// The same digest of an inference shard kept in shard memory (on a GPU:
// computed there, device_shards.h), so the bytes need not come back.
Result<uint64_t> shardDigest(const RankLayout& layout, gpu::ShardMemory& memory,
                             const gpu::ShardBuffer& shard);
// The digest the rank's shard has at `version`, from the generator.
Result<uint64_t> expectedShardDigest(const workloads::SyntheticWeights& weights,
                                     const RankLayout& layout, int version);

}  // namespace tide::exec
