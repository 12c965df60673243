#include "engine/exec/executor/shard_digest.h"

#include <xxhash.h>

#include <memory>
#include <vector>

#include "engine/exec/executor/fp8_blocks.h"
#include "engine/exec/executor/hash_state.h"

namespace tide::exec {

uint64_t shardDigest(const RankLayout& layout, const uint8_t* shard) {
  HashState h;
  for (const auto& p : layout.placed(plan::Space::kInfer)) {
    XXH3_64bits_update(h.s, shard + p.offset, p.bytes);
  }
  return XXH3_64bits_digest(h.s);
}

Result<uint64_t> shardDigest(const RankLayout& layout, gpu::ShardMemory& memory,
                             const gpu::ShardBuffer& shard) {
  std::vector<gpu::ShardRange> ranges;
  for (const auto& p : layout.placed(plan::Space::kInfer)) ranges.push_back({p.offset, p.bytes});
  return memory.checksum(shard, ranges);
}

Result<uint64_t> expectedShardDigest(const workloads::SyntheticWeights& weights,
                                     const RankLayout& layout, int version) {
  HashState h;
  std::vector<uint8_t> block;
  for (const auto& p : layout.placed(plan::Space::kInfer)) {
    block.resize(p.bytes);
    TIDE_RETURN_IF_ERROR(fillExpected(weights, p, version, block.data()));
    XXH3_64bits_update(h.s, block.data(), block.size());
  }
  return XXH3_64bits_digest(h.s);
}

}  // namespace tide::exec
