#pragma once
// Work graphs of the weight-sync strategies at scale, built from the
// mechanisms of the systems they model (docs/sim.md, "Mechanisms"):
//
//  broadcast: per pipeline stage and bucket, the stage all-gathers (TP ring
//    on NVLink for non-expert weights, EP ring across the stage's nodes for
//    experts), its head rank converts and quantizes, calls the engines and
//    chain-broadcasts the bucket to every inference rank; each engine runs
//    its loader over the whole bucket. The engines take one update request
//    at a time (a lock shared by all stages).
//  p2p: the same all-gather, then every sending rank converts the whole
//    bucket, maps its names, loads its pinned CPU replica through the
//    engine's loader (D2H of the kept slices) and RDMA-writes each of its
//    targets their share; targets are assigned as the RL framework does.
//
// Both update the non-expert weights of every stage first, meet at a
// barrier, then update the experts; both start and end with control rounds
// to the engines, and post-processing on every inference rank.

#include <string>

#include "engine/core/status.h"
#include "sim/model_shares.h"
#include "sim/scenario.h"
#include "sim/topology.h"
#include "sim/work_graph.h"

namespace tide::sim {

// Stages that bound the update's spans (StrategyResult): the control rounds
// to the engines, a first update's registration, the post-processing.
inline constexpr const char* kStageRounds = "pause_resume";
inline constexpr const char* kStageRegister = "register";
inline constexpr const char* kStagePostprocess = "postprocess";

struct GraphInfo {
  double mergeFactor = 1;  // real buckets per simulated bucket
  int bucketsPerStage = 0;
  double registrationSeconds = 0;  // per training rank, when first_update
};

// GPU ids: training rank r is GPU r; inference rank i is GPU sc.inferBase() + i.
Result<GraphInfo> buildStrategyGraph(const Scenario& sc, const std::string& strategy,
                                     const ModelShares& shares, const Topology& topo, WorkGraph& g);

}  // namespace tide::sim
