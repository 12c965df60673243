#pragma once
// The one problem builder: a weight update described once (model, layouts,
// placement, cluster, strategy and its options) and the plan it gives.
// `tide sync`, `tide plan`, `tide sim`, `tide validate` and scenario files
// all build their plans here, from one set of defaults (plan::PlanOptions),
// so a scenario and `tide sync` flags that describe the same update make
// the same plan, byte for byte. The plan records what it was made for
// (PlanParams::workload).

#include <memory>
#include <optional>
#include <string>

#include "engine/core/status.h"
#include "engine/plan/reshard.h"
#include "engine/plan/transfer_plan.h"
#include "engine/sync/strategy.h"
#include "engine/sync/strategy_registry.h"
#include "workloads/cluster.h"
#include "workloads/layout.h"
#include "workloads/model.h"

namespace tide::sync {

struct UpdateSpec {
  std::string modelName;       // zoo name or model file, as given (recorded in the plan)
  workloads::ModelSpec model;  // as planned: scaled, its served dtype and FP8 block applied
  workloads::TrainLayout train;
  workloads::InferLayout infer;
  workloads::ClusterSpec cluster;
  plan::Placement placement;
  const StrategyDescriptor* strategy = nullptr;
  StrategyOptions options;
  // Tensors as the caller has them (tide from Python), instead of the
  // inventory of `model`'s architecture: nothing says how they split, so
  // the layouts split none (tp = pp = cp = ep = 1; any dp and engines) and
  // `model` is only named.
  std::optional<workloads::ModelInventory> tensors;
};

// Built once per update; points into itself, so it is not copied or moved.
struct UpdateProblem {
  workloads::ModelSpec spec;
  workloads::ModelInventory inventory;  // empty for a strategy planned from counts
  workloads::TrainLayout train;
  workloads::InferLayout infer;
  workloads::ClusterSpec cluster;
  plan::TransferPlan base;  // ranks (and, planned from boxes, tensors and holdings)
  plan::Reshard reshard;
  StrategyOptions strategyOptions;
  const StrategyDescriptor* descriptor = nullptr;
  std::unique_ptr<Strategy> strategy;  // the descriptor's plan builder
  plan::PlanWorkload workload;         // what its plans record they were made for

  UpdateProblem() = default;
  UpdateProblem(const UpdateProblem&) = delete;
  UpdateProblem& operator=(const UpdateProblem&) = delete;

  // Checks the layouts against the model and the placement against the
  // cluster (one error naming what does not fit), then lays out the base.
  static Result<std::unique_ptr<UpdateProblem>> build(UpdateSpec spec);

  // The strategy's problem; `disposeBase`: the strategy may take the base
  // (it is emptied), for a caller that plans once.
  SyncProblem problem(bool disposeBase = false);
  // The strategy's plan, with the workload recorded in its params.
  Result<plan::TransferPlan> makePlan(bool disposeBase = false);
};

}  // namespace tide::sync
