#pragma once
// A weight-sync strategy turns a resharding problem into a TransferPlan; it
// never moves bytes itself. Strategies are listed explicitly, as
// descriptors, in strategy_registry.cc (no self-registration).

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/status.h"
#include "engine/core/units.h"
#include "engine/plan/reshard.h"
#include "engine/plan/transfer_plan.h"
#include "workloads/cluster.h"
#include "workloads/layout.h"
#include "workloads/model.h"

namespace tide::sync {

// What a strategy plans with: the plan's own typed options, one set of
// defaults for every command (engine/plan/plan_params.h).
using StrategyOptions = plan::PlanOptions;

struct SyncProblem {
  const plan::TransferPlan* base = nullptr;  // ranks, tensors, train/infer holdings
  const plan::Reshard* reshard = nullptr;
  const workloads::ClusterSpec* cluster = nullptr;
  const workloads::TrainLayout* train = nullptr;  // the layouts base was built from
  const workloads::InferLayout* infer = nullptr;
  StrategyOptions options;
  // The model the layouts shard: strategies that plan by steps count its
  // tensors' kinds, layers and experts.
  const workloads::ModelSpec* model = nullptr;
  // Set by a caller that has no further use for *base: the strategy may take
  // it (startPlan) instead of copying it. At 16,384 GPUs the base plan's
  // holdings are over a gigabyte, and a copy sat beside them until validation.
  plan::TransferPlan* disposableBase = nullptr;
};

// The plan a strategy extends: the base itself when the caller gave it away,
// else a copy, with the options it is planned with. After this call a
// strategy reads ranks, tensors and holdings from the returned plan only
// (the base may be empty).
inline plan::TransferPlan startPlan(const SyncProblem& pr) {
  plan::TransferPlan p = pr.disposableBase != nullptr && pr.disposableBase == pr.base
                             ? std::move(*pr.disposableBase)
                             : *pr.base;
  p.params.options = pr.options;
  return p;
}

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string_view name() const = 0;
  virtual std::string_view description() const = 0;
  // Emits a validated plan, or fails with the reason.
  [[nodiscard]] virtual Result<plan::TransferPlan> makePlan(const SyncProblem& problem) const = 0;
};

}  // namespace tide::sync
