#pragma once
// Runs a TransferPlan (engine/plan) in the simulator: the same plan the real
// executor runs, and the only way a strategy reaches the simulator.
//
// Moves are grouped by (stage, bucket, src, dst, kind) into one flow each
// (same endpoints, same time: the physics of one flow); broadcast hops of one
// bucket become one chain flow over all hops; conversions run on the GPU's
// memory when the dtype changes (a quantization pass), else as host copies.
// Stage dependencies become joins, per bucket where the plan says so.
// The plan's steps (its non-wire work) are lowered by step_lowering.h and
// priced by `costs`, a cost profile's constants. `p` must be valid
// (TransferPlan::validate): strategies and TransferPlan::fromJson return
// only valid plans.

#include "engine/core/status.h"
#include "engine/plan/transfer_plan.h"
#include "sim/calibration.h"
#include "sim/simulator.h"
#include "workloads/cluster.h"

namespace tide::sim {

// `chunkBytes` > 0: broadcast chains forward in chunks of that size (store
// and forward per hop), so a bucket's chain pays one chunk time per hop after
// the first (the pipeline fill), at its share of the hop when other stages'
// chains cross the same link; the plan does not carry the chunk size.
// NICs move payload at the cluster's nicPayloadBps() (an emulated link's
// shaper meters whole frames). `hostTcpBps` > 0 (emulated
// clusters only): every node's ranks are processes of one host, so tcp
// between two ranks of a node is that host's loopback; one link of that
// rate, shared by all nodes, carries it (gathers, and a chain with intra-node
// hops, charged once per chain like any re-crossed link), and a chain's
// intra-node hop fills one chunk at that rate.
struct LoweringOptions {
  double chunkBytes = 0;
  double hostTcpBps = 0;
  // > 0: the plan's buckets are kept in at most this many contiguous groups
  // (a group's moves between two ranks one flow). A box-level plan of a
  // 1 T-parameter model has ~1,000 buckets and ~90 k (bucket, source,
  // target) groups, which a flow-level solve cannot afford one by one; 0
  // keeps every bucket (small plans, `tide validate`).
  int maxBucketGroups = 0;
  // > 0: fewer bucket groups (halving) until the plan's moves make at most
  // this many flows.
  size_t maxFlows = 0;
  Progress progress;  // of the run (executor.h)
};
[[nodiscard]] Result<StrategyResult> simulatePlan(const plan::TransferPlan& p,
                                                  const workloads::ClusterSpec& cluster,
                                                  const Calibration& costs,
                                                  const LoweringOptions& options = {});

}  // namespace tide::sim
