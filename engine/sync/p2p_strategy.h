#pragma once
// P2P: every training rank writes exactly the regions each inference rank
// needs, one-sided, from a staging replica it registers once.
//
// Stage "convert": each sender copies (and, for FP8 targets, block-quantizes)
// the part of its shard it will send into its staging replica — the bounding
// box of its pieces, widened to whole FP8 blocks. Stage "write": one write
// per (piece, target). Both are bucketed by tensor order and the write of
// bucket b depends only on the convert of bucket b, so conversion of the next
// bucket overlaps the writes of this one. Sources are chosen by
// assignSources (balanced, or round-robin for comparison).

#include "engine/sync/strategy.h"

namespace tide::sync {

class P2pStrategy final : public Strategy {
 public:
  std::string_view name() const override { return "p2p"; }
  std::string_view description() const override {
    return "one-sided writes of exactly the needed regions from every training rank";
  }
  Result<plan::TransferPlan> makePlan(const SyncProblem& problem) const override;
};

// Bucket of each tensor: tensors in inventory order, cut every `bucketBytes`
// of training-dtype bytes.
std::vector<uint32_t> tensorBuckets(const plan::TransferPlan& base, uint64_t bucketBytes);

}  // namespace tide::sync
