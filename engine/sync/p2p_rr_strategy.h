#pragma once
// p2p-rr: p2p's plan (p2p_strategy.h) with the naive source choice: the
// sources of a piece take its targets in turn, whatever their NICs already
// carry. The baseline that p2p's balanced assignment is measured against,
// and the worked example of docs/adding-a-strategy.md.

#include "engine/sync/strategy.h"

namespace tide::sync {

class P2pRoundRobinStrategy final : public Strategy {
 public:
  std::string_view name() const override { return "p2p-rr"; }
  std::string_view description() const override {
    return "p2p's one-sided writes with round-robin sources instead of balanced ones";
  }
  Result<plan::TransferPlan> makePlan(const SyncProblem& problem) const override;
};

}  // namespace tide::sync
