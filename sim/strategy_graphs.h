#pragma once
// Work graphs of the weight-sync strategies at scale, built from the
// mechanisms of the systems they model (docs/sim.md, "Mechanisms"):
//
//  broadcast: per pipeline stage and bucket, the stage all-gathers (TP ring
//    on NVLink, EP ring across the stage's nodes), its head rank quantizes,
//    calls the engines and chain-broadcasts the bucket to every inference
//    rank; each engine ingests the whole bucket. The engines take one update
//    request at a time (a lock shared by all stages).
//  p2p: the same all-gather, then every training rank quantizes the shards
//    of its target engine ranks, copies them to its pinned CPU replica (D2H,
//    then a CPU-side load), and RDMA-writes each target its share; no
//    per-write engine involvement; targets are assigned round-robin.
//
// Both end with post-processing on every inference rank and the resume call,
// and start with the pause call.

#include <string>

#include "engine/core/status.h"
#include "sim/model_shares.h"
#include "sim/scenario.h"
#include "sim/topology.h"
#include "sim/work_graph.h"

namespace tide::sim {

struct GraphInfo {
  double mergeFactor = 1;  // real buckets per simulated bucket
  int bucketsPerStage = 0;
  double registrationSeconds = 0;  // per training rank, when first_update
};

// GPU ids: training rank r is GPU r; inference rank i is GPU trainNodes*G + i.
Result<GraphInfo> buildStrategyGraph(const Scenario& sc, const std::string& strategy,
                                     const ModelShares& shares, const Topology& topo, WorkGraph& g);

}  // namespace tide::sim
