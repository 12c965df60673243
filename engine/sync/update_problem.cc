#include "engine/sync/update_problem.h"

#include <algorithm>

#include "workloads/dtype.h"

namespace tide::sync {

namespace {

// Tensors given without split rules are planned whole on every rank.
Status checkUnsplit(const workloads::TrainLayout& t, const workloads::InferLayout& i,
                    const StrategyDescriptor& d) {
  if (d.input != PlanInput::kBoxes) {
    return TIDE_ERROR(Code::kInvalidArgument,
                      "strategy '" + std::string(d.name) +
                          "' plans from a model's architecture; a list of tensors is planned by "
                          "the strategies planned from boxes (broadcast, p2p, p2p-rr)");
  }
  const bool trainWhole =
      t.tp == 1 && t.pp == 1 && t.cp == 1 && t.ep == 1 && t.etp == 1 && t.fsdp == 1;
  const bool inferWhole = i.tp == 1 && i.ep == 1 && i.dpAttn == 1;
  if (!trainWhole || !inferWhole) {
    return TIDE_ERROR(Code::kInvalidArgument,
                      "layouts " + t.toString() + " -> " + i.toString() +
                          ": a list of tensors carries no split rules, so only dp (training) "
                          "and engines (inference) may exceed 1");
  }
  return Status::ok();
}

}  // namespace

Result<std::unique_ptr<UpdateProblem>> UpdateProblem::build(UpdateSpec in) {
  if (!in.strategy) return TIDE_ERROR(Code::kInvalidArgument, "update: no strategy");
  auto p = std::make_unique<UpdateProblem>();
  p->spec = std::move(in.model);
  p->train = in.train;
  p->infer = in.infer;
  p->cluster = std::move(in.cluster);
  p->strategyOptions = in.options;
  p->descriptor = in.strategy;
  const StrategyDescriptor& d = *p->descriptor;
  if (in.tensors) {
    TIDE_RETURN_IF_ERROR(checkUnsplit(p->train, p->infer, d));
    p->inventory = std::move(*in.tensors);
  } else {
    TIDE_RETURN_IF_ERROR(workloads::validate(p->train, p->spec));
    TIDE_RETURN_IF_ERROR(workloads::validate(p->infer, p->spec));
  }
  if (in.placement.colocated && d.input != PlanInput::kBoxes) {
    // A step's send between two ranks of one GPU would take no link in the
    // simulator's step lowering: only moves are lowered onto the device, so
    // only strategies planned from boxes run colocated.
    return TIDE_ERROR(Code::kInvalidArgument,
                      "strategy '" + std::string(d.name) +
                          "' models engines on GPUs of their own; colocated updates run the "
                          "strategies planned from boxes");
  }
  TIDE_ASSIGN_OR_RETURN(p->strategy, d.planBuilder());
  if (d.input == PlanInput::kBoxes) {
    if (!in.tensors) p->inventory = workloads::buildInventory(p->spec);
    TIDE_ASSIGN_OR_RETURN(p->base, plan::basePlan(p->inventory, p->train, p->infer, in.placement));
  } else {
    TIDE_ASSIGN_OR_RETURN(
        p->base.ranks, plan::placeRanks(p->train.worldSize(), p->infer.worldSize(), in.placement));
  }
  const int nodes = plan::nodesNeeded(p->base, p->cluster.gpusPerNode);
  if (nodes > p->cluster.nodes) {
    return TIDE_ERROR(Code::kInvalidArgument,
                      "cluster " + p->cluster.name + " has " + std::to_string(p->cluster.nodes) +
                          " nodes; the layouts need " + std::to_string(nodes) + " (use " +
                          p->cluster.name + ":nodes=" + std::to_string(nodes) + ")");
  }
  if (d.input == PlanInput::kBoxes) {
    TIDE_ASSIGN_OR_RETURN(p->reshard, plan::planReshard(p->base));
  }
  plan::PlanWorkload& w = p->workload;
  w.model = in.modelName;
  w.scale = p->spec.scale;
  w.inferDtype = workloads::dtypeName(p->spec.inferDtype);
  w.fp8Block = p->spec.fp8Block;
  w.train = p->train.toString();
  w.infer = p->infer.toString();
  w.cluster = p->cluster.name;
  w.gpusPerNode = in.placement.gpusPerNode;
  w.colocated = in.placement.colocated;
  // Resolved: a scenario names the first inference GPU, the flags leave it
  // to the placement; the same ranks record the same GPU.
  for (const auto& r : p->base.ranks) {
    if (r.role != plan::Role::kInference) continue;
    w.inferFirstGpu = static_cast<int>(r.node) * in.placement.gpusPerNode + static_cast<int>(r.gpu);
    break;
  }
  return p;
}

SyncProblem UpdateProblem::problem(bool disposeBase) {
  return SyncProblem{&base,  &reshard,        &cluster, &train,
                     &infer, strategyOptions, &spec,    disposeBase ? &base : nullptr};
}

Result<plan::TransferPlan> UpdateProblem::makePlan(bool disposeBase) {
  TIDE_ASSIGN_OR_RETURN(plan::TransferPlan p, strategy->makePlan(problem(disposeBase)));
  p.params.workload = workload;
  return p;
}

}  // namespace tide::sync
