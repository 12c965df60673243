#pragma once
// Shard contents that come from the caller instead of the seeded generator
// (tide from Python: a trainer's named tensors, an engine's own copy). With
// one (ExecOptions::shardSource) the executor fills the training shard from
// it, loads the inference shard's start from it, and verifies every
// inference byte with it; the generator is not used.

#include <cstdint>

#include "engine/core/status.h"
#include "engine/exec/executor/rank_layout.h"

namespace tide::exec {

class ShardSource {
 public:
  virtual ~ShardSource() = default;
  // The training shard of version `version` at `base`, laid out as `layout`
  // says. Runs outside the timed part of a step, before its pause barrier.
  virtual Status fillTrain(const RankLayout& layout, int version, uint8_t* base) = 0;
  // The inference shard a rank starts from (what its engine loaded).
  virtual Status loadInfer(const RankLayout& layout, uint8_t* base) = 0;
  // The inference bytes checked, or kDataLoss naming the first block of rank
  // `rank` that is not version `version`; the expectation is computed apart
  // from the transfer.
  virtual Result<uint64_t> verifyInfer(const RankLayout& layout, int rank, int version,
                                       const uint8_t* base) const = 0;
};

}  // namespace tide::exec
