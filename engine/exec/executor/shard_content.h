#pragma once
// What a rank's shards hold at a version, from the seeded generator: the
// training shard a trainer materializes before an update, the inference
// shard a rank starts from, and the check of an inference shard after one
// (recomputed independently of the transfer).

#include <cstdint>

#include "engine/core/status.h"
#include "engine/exec/executor/rank_layout.h"
#include "workloads/weights.h"

namespace tide::exec {

// Version `version` of the training shard at `base` (bf16 only).
Status fillTrainShard(const workloads::SyntheticWeights& weights, const RankLayout& layout,
                      int version, uint8_t* base);
// Version `version` of the inference shard at `base`; `poison`: a pattern
// no version has instead (tests: a byte an update misses cannot pass).
Status fillInferShard(const workloads::SyntheticWeights& weights, const RankLayout& layout,
                      int version, bool poison, uint8_t* base);
// The bytes checked, or kDataLoss naming rank `rank`'s first block that is
// not version `version`.
Result<uint64_t> verifyInferShard(const workloads::SyntheticWeights& weights,
                                  const RankLayout& layout, int rank, int version,
                                  const uint8_t* base);

}  // namespace tide::exec
