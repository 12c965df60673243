#pragma once
// Broadcast: the RL framework default. Per pipeline stage:
//   "gather s"    the TP/EP shards of the stage's tensors go to the stage head
//                 (training rank tp=cp=dp=0 of stage s), packed into buckets
//                 of whole (HF-format) tensors, split on dim 0 when a tensor
//                 is larger than a bucket;
//   "broadcast s" each bucket travels a chain head -> every inference rank, as
//                 NCCL's ring broadcast does: hops are pipelined in chunks of
//                 params.chunk_bytes, and bucket i uses channel i mod C, whose
//                 chain enters and leaves every node through a different GPU
//                 (so C channels spread over C NICs);
//   "keep s"      every inference rank copies (and converts, e.g. to FP8) its
//                 slice out of the buckets it received.
// Every inference rank receives the whole model; only PP-many ranks send.

#include "engine/sync/strategy.h"

namespace tide::sync {

class BroadcastStrategy final : public Strategy {
 public:
  std::string_view name() const override { return "broadcast"; }
  std::string_view description() const override {
    return "gather to each pipeline stage head, chain-broadcast buckets to every inference rank";
  }
  Result<plan::TransferPlan> makePlan(const SyncProblem& problem) const override;
};

}  // namespace tide::sync
