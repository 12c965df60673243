#pragma once
// Models of the Miles RL framework's two weight-update paths at the version
// of its published runs, as plans of steps (miles_update.h): they are
// simulated, not run (a real run needs the framework and its engines).
//
//  miles-broadcast: per pipeline stage and bucket, the stage all-gathers (TP
//    ring on NVLink for non-expert weights, EP ring across the stage's nodes
//    for experts), its head rank converts and quantizes, calls the engines
//    and chain-broadcasts the bucket to every inference rank; each engine
//    runs its loader over the whole bucket. The engines take one update
//    request at a time (a polled lock shared by all stages).
//  miles-p2p: the same all-gather, then every sending rank converts the
//    whole bucket, maps its names, loads its pinned CPU replica through the
//    engine's loader (D2H of the kept slices) and RDMA-writes each of its
//    targets their share; targets are assigned as the framework does.
//
// Both update the non-expert weights of every stage first, meet at a
// barrier, then update the experts; both start and end with control rounds
// to the engines, and post-processing on every inference rank.

#include "engine/sync/strategy.h"

namespace tide::sync::miles {

class MilesBroadcastStrategy final : public Strategy {
 public:
  std::string_view name() const override { return "miles-broadcast"; }
  std::string_view description() const override {
    return "Miles' broadcast path: stage heads gather, convert and NCCL-broadcast each bucket "
           "to every engine rank, one engine call at a time";
  }
  Result<plan::TransferPlan> makePlan(const SyncProblem& problem) const override;
};

class MilesP2pStrategy final : public Strategy {
 public:
  std::string_view name() const override { return "miles-p2p"; }
  std::string_view description() const override {
    return "Miles' p2p path: every rank gathers and converts, loads a CPU replica per engine "
           "rank it serves and RDMA-writes its targets (round-robin assignment)";
  }
  Result<plan::TransferPlan> makePlan(const SyncProblem& problem) const override;
};

}  // namespace tide::sync::miles
