#pragma once
// Reshard planner: from a training placement to an inference placement.
//
// For every tensor, the distinct training boxes (one per group of replicas:
// CP/DP/EDP copies hold the same box) and the distinct inference boxes (DP-
// attention groups and engines hold copies) are intersected. Each non-empty
// intersection is a Piece: a box that one of its `sources` (training ranks
// holding it) must deliver to every one of its `targets` (inference ranks
// needing it). Strategies choose the source per target and emit moves.
//
// Fails closed, with the reason, when a training layout leaves a byte of an
// inference shard uncovered, covers it twice (partially overlapping shards),
// or a tensor cannot be expressed as a plan box.

#include <cstdint>
#include <span>
#include <vector>

#include "engine/core/status.h"
#include "engine/plan/transfer_plan.h"
#include "workloads/layout.h"
#include "workloads/tensor.h"

namespace tide::plan {

struct Piece {
  uint32_t tensor = 0;
  RegionBox box;
  uint32_t srcBegin = 0, srcEnd = 0;  // range in Reshard::sources
  uint32_t dstBegin = 0, dstEnd = 0;  // range in Reshard::targets
};

struct Reshard {
  std::vector<Piece> pieces;
  std::vector<uint32_t> sources;  // plan rank ids of training ranks
  std::vector<uint32_t> targets;  // plan rank ids of inference ranks

  std::span<const uint32_t> sourcesOf(const Piece& p) const {
    return {sources.data() + p.srcBegin, p.srcEnd - p.srcBegin};
  }
  std::span<const uint32_t> targetsOf(const Piece& p) const {
    return {targets.data() + p.dstBegin, p.dstEnd - p.dstBegin};
  }
};

// Where ranks sit. Training ranks are plan ranks 0..T-1, inference ranks
// T..T+I-1; GPUs are numbered node * gpusPerNode + gpu. Disaggregated:
// training fills GPUs 0.., inference starts at `inferFirstGpu` (-1: the
// first GPU of the node after the training ranks'); colocated: inference
// rank i shares GPU (node, gpu) with training rank i.
struct Placement {
  int gpusPerNode = 8;
  bool colocated = false;
  int inferFirstGpu = -1;
};

// The ranks of a placement, without tensors or holdings: what a strategy
// that plans by steps alone starts from.
Result<std::vector<RankInfo>> placeRanks(int trainRanks, int inferRanks,
                                         const Placement& placement);

// The plan skeleton every strategy starts from: ranks, tensors, and the
// kTrain / kInfer holdings given by the layouts (validated here).
Result<TransferPlan> basePlan(const workloads::ModelInventory& inv,
                              const workloads::TrainLayout& train,
                              const workloads::InferLayout& infer, const Placement& placement);

// Pieces from the holdings of `base` (kTrain -> kInfer); checks that every
// inference byte is covered exactly once by the training boxes.
Result<Reshard> planReshard(const TransferPlan& base);

// Nodes the placement needs.
int nodesNeeded(const TransferPlan& base, int gpusPerNode);

}  // namespace tide::plan
