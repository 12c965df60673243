#pragma once
// Runs a TransferPlan (engine/plan) in the simulator: the same plan the real
// executor runs, lowered into the same units (engine/plan/schedule.h), and
// the only way a strategy reaches the simulator.
//
// Each unit is priced as a flow: a batch of writes over the path between
// its ranks, a local unit as a host copy, or on the GPU's memory when it
// changes the dtype (a quantization pass) or joins two ranks of one GPU.
// The schedule's gates become joins, its dependencies edges. A hop is one
// flow per piece, after the piece before it and the same piece of the hop
// into its sender; past LoweringOptions::maxHopPieces a chain is priced as
// one flow over its hops with a pipeline fill per hop. The plan's steps (its
// non-wire work) are lowered by step_lowering.h and priced by `costs`, a
// cost profile's constants. `p` must be valid (TransferPlan::validate):
// strategies and TransferPlan::fromJson return only valid plans.

#include <vector>

#include "engine/core/status.h"
#include "engine/plan/transfer_plan.h"
#include "sim/calibration.h"
#include "sim/simulator.h"
#include "workloads/cluster.h"

namespace tide::sim {

// Broadcast chains forward in the plan's chunks (PlanOptions::chunkBytes),
// store and forward per hop. NICs move payload at the cluster's nicPayloadBps() (an emulated link's
// shaper meters whole frames). `hostTcpBps` > 0 (emulated
// clusters only): every node's ranks are processes of one host, so tcp
// between two ranks of a node is that host's loopback; one link of that
// rate, shared by all nodes, carries it (gathers, and a chain with intra-node
// hops, charged once per chain like any re-crossed link), and a chain's
// intra-node hop fills one chunk at that rate.
struct LoweringOptions {
  double hostTcpBps = 0;
  // Emulated clusters: their ranks quantize to FP8 on the host's CPUs, not
  // on a GPU. > 0: a conversion runs at this rate on one core (in the bytes
  // of plan::fp8PassBytes, the measure a GPU pass is priced in), and all
  // ranks' conversions together on at most hostCores cores.
  double hostConvertBps = 0;
  int hostCores = 1;
  // Emulated clusters, when measured (harness/sim/conversion_probe.h): by
  // schedule unit, one core's seconds for its conversion, which it then
  // takes alone on its rank's core (hostConvertBps > 0 is the unit rate);
  // empty: every conversion at hostConvertBps.
  std::vector<double> convertSeconds;
  // > 0: the plan's buckets are kept in at most this many contiguous groups
  // (a group's moves between two ranks one flow). A box-level plan of a
  // 1 T-parameter model has ~1,000 buckets and ~90 k (bucket, source,
  // target) groups, which a flow-level solve cannot afford one by one; 0
  // keeps every bucket (small plans, `tide validate`).
  int maxBucketGroups = 0;
  // > 0: fewer bucket groups (halving) until the plan's moves make at most
  // this many flows.
  size_t maxFlows = 0;
  // At most this many hop pieces are priced one by one (per-unit times for
  // `tide validate`); a plan with more, or with merged buckets, prices each
  // chain as one flow.
  size_t maxHopPieces = 200000;
  Progress progress;  // of the run (executor.h)
};
[[nodiscard]] Result<StrategyResult> simulatePlan(const plan::TransferPlan& p,
                                                  const workloads::ClusterSpec& cluster,
                                                  const Calibration& costs,
                                                  const LoweringOptions& options = {});

}  // namespace tide::sim
