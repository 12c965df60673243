#pragma once
// The weight update of the Miles RL framework (with SGLang engines and the
// Mooncake transfer engine) at scale, as plan steps: the mechanisms its two
// paths share. docs/sim.md, "Mechanisms", says what each models and why.
//
// Plan ranks: training rank r is plan rank r, inference rank i is plan rank
// T + i (T = training world size). Every step carries counts and bytes; the
// cost profile "miles" prices them.

#include <cstdint>
#include <vector>

#include "engine/core/status.h"
#include "engine/plan/transfer_plan.h"
#include "engine/sync/miles/model_shares.h"
#include "engine/sync/strategy.h"

namespace tide::sync::miles {

using StepId = uint32_t;

struct Ctx {
  const SyncProblem& pr;
  const workloads::TrainLayout& tl;
  const workloads::InferLayout& il;
  const StrategyOptions& o;
  const ModelShares& shares;
  plan::StepGraph& g;
  int channels = 1;
  uint32_t inferBase = 0;  // plan rank of inference rank 0
  double k = 1;            // real buckets per step bucket (merge factor)
  int maxBuckets = 0;      // step buckets per stage and phase, at most
  // Which update phase is being built: the non-expert weights (TP-gathered
  // one by one) or, after a barrier of all ranks, the routed experts
  // (EP-gathered by bucket).
  bool expertPhase = false;
};

// A bucket's share of its stage's phase, one real bucket's worth.
struct BucketShare {
  double tensors, quantTensors, units;
};
BucketShare bucketShare(const StageBytes& sb, int nb);

// Host operations of one bucket's gather bookkeeping on one rank.
double gatherOps(const Ctx& x, double unitsInBucket);

// A weight loader's host operations over `tensors` handed to it, `kept` of
// which it copies with `copyOps` operations each.
double loaderOps(double tensors, double kept, double copyOps);
// Host operations an engine rank spends receiving a broadcast bucket of
// `tensors`, and the copies its loader makes of a kept tensor.
inline constexpr double kReceiveOps = 2;
inline constexpr double kEngineCopyOps = 2;
inline constexpr double kReplicaCopyOps = 3;

StepId hostOps(Ctx& x, uint32_t rank, double ops, double loopSteps, uint16_t stage);

// Ring all-gather of `bytesOut` gathered bytes among `members` after `after`.
StepId allGather(Ctx& x, const std::vector<uint32_t>& members, double bytesOut, StepId after,
                 uint16_t stage);
// Chain broadcast of `bytes` from `root` to `receivers` after `after`.
StepId chainBroadcast(Ctx& x, uint32_t root, const std::vector<uint32_t>& receivers, double bytes,
                      StepId after, uint16_t stage);

// The breakdown rows of a bucket's gather and the work after it, registered
// in this order by gatherStages().
struct BucketStages {
  uint16_t gather, copy, issue, convert, quant;
};
BucketStages gatherStages(plan::StepGraph& g);

// A step of `kind` moving `bytes` on `rank`.
plan::Step sizedStep(plan::StepKind kind, uint32_t rank, double bytes, uint16_t stage);
// The end of a rank's host work on a bucket and of its GPU work on it.
struct Converted {
  StepId host, gpu;
};
// One rank's work on a gathered bucket (miles_update.cc).
Converted convertBucket(Ctx& x, uint32_t rank, double bucket, double quantBytes,
                        const BucketShare& share, StepId book, StepId gathered, BucketStages st);

// Buckets of a stage's phase as the framework cuts them, and the step
// buckets they are kept in (setting x.k).
int realBuckets(const StageBytes& sb);
int stageBuckets(Ctx& x, const StageBytes& sb);

std::vector<uint32_t> epGroup(const workloads::TrainLayout& l, int pp);
std::vector<uint32_t> tpGroup(const workloads::TrainLayout& l, int pp);

// Runs `stage(s, bytes, after) -> StepId` for every stage of both phases:
// the non-expert weights, a barrier of all ranks, the routed experts.
template <class StageFn>
StepId inPhases(Ctx& x, StepId start, StageFn stage) {
  StepId phaseStart = start;
  for (int ph = 0; ph < 2; ++ph) {
    x.expertPhase = ph == 1;
    StepId barrier = x.g.join();
    x.g.dep(phaseStart, barrier);
    for (int s = 0; s < x.tl.pp; ++s) {
      const StageBytes& sb = x.shares.phases[ph][s];
      if (sb.train > 0) x.g.dep(stage(s, sb, phaseStart), barrier);
    }
    phaseStart = barrier;
  }
  return phaseStart;
}

// Post-processing on every inference rank and the closing control rounds.
StepId finish(Ctx& x, StepId allDone, double endRounds);

// Checks the problem, computes the shares (into `shares`) and starts the
// plan: its ranks, parameters and the model's bytes as sent. makeCtx sets
// the step buckets (`exact`: every real bucket kept) and the shape fields;
// openRounds adds the control rounds that open the update. A training
// layout sharded by FSDP (fsdp > 1) is refused unless `fsdpLayouts`: the
// Megatron models gather over TP and EP only.
Result<plan::TransferPlan> beginPlan(const SyncProblem& pr, std::string_view strategy,
                                     ModelShares& shares, bool fsdpLayouts = false);
Ctx makeCtx(const SyncProblem& pr, const ModelShares& shares, plan::TransferPlan& p, bool exact);
StepId openRounds(Ctx& x);

}  // namespace tide::sync::miles
