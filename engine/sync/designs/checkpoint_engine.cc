// checkpoint-engine (design_strategies.h).

#include <algorithm>
#include <cmath>

#include "engine/sync/designs/design_steps.h"
#include "engine/sync/designs/design_strategies.h"

namespace tide::sync::designs {

namespace {

// The update request to the engines and the reply that ends it.
constexpr double kCheckpointEngineOpenRounds = 1;
constexpr double kCheckpointEngineCloseRounds = 1;
// The engines' IPC buffer holds two buckets: broadcasting bucket g+2
// waits for the engines to have reloaded bucket g.
constexpr int kBuffers = 2;
// Buckets kept distinct; beyond, consecutive ones of an owner merge.
constexpr int64_t kMaxSteps = 4096;
// P2P mode's training side: a tensor's dtype cast and its copy to host.
constexpr double kOffloadOps = 2;
// register_checkpoint's barrier and the metadata exchange (gather_metas).
constexpr double kMetaRounds = 2;

// P2P mode: each training rank's share of the checkpoint (every T-th full
// tensor, gathered over its pipeline stage's ranks) copied to its node's
// host memory and registered with the transfer engine; then the barrier and
// the metadata exchange. Returns its end.
StepId trainingSide(Ctx& x, const miles::ModelShares& shares, StepId start) {
  auto& g = x.g;
  const auto& tl = x.tl;
  const uint16_t sGather = g.stage("gather");
  const uint16_t sOffload = g.stage("offload");
  const uint16_t sReg = g.stage(plan::kStageRegister);
  const int T = tl.worldSize(), per = tl.tp * tl.cp * tl.dp;
  const double pages = shares.wireTotal / T / static_cast<double>(x.o.pageBytes);
  StepId done = g.join();
  for (int s = 0; s < tl.pp; ++s) {
    const miles::StageBytes& sb = shares.stages[s];
    std::vector<uint32_t> stage;
    for (int r = 0; r < per; ++r) stage.push_back(static_cast<uint32_t>(s * per + r));
    // Full tensors on every rank of the stage (the weights generator).
    StepId gathered = miles::allGather(x, stage, sb.train, start, sGather);
    for (uint32_t r : stage) {
      StepId ops = miles::hostOps(x, r, sb.tensors / per * kOffloadOps, 0, sOffload);
      g.dep(gathered, ops);
      StepId d2h =
          g.add(miles::sizedStep(plan::StepKind::kDeviceToHost, r, shares.wireTotal / T, sOffload));
      g.dep(ops, d2h);
      StepId reg = g.add(plan::StepKind::kRegister, r, pages, sReg);
      g.dep(d2h, reg);
      g.dep(reg, done);
    }
  }
  StepId metas = g.add(plan::StepKind::kControlRound, 0, kMetaRounds, g.stage(plan::kStageRounds));
  g.dep(done, metas);
  return metas;
}

// The broadcast path as ParameterServer._update_per_bucket runs it: in
// round i every rank copies its i-th bucket into a device staging buffer
// (all ranks at once): from its own pinned host memory (broadcast mode), or
// in P2P mode by an RDMA read from the owner's registered host memory on the
// training side (the transfer engine's pull); then, owner by owner, the
// owner copies it into the shared IPC buffer, broadcasts it to every rank,
// waits for its engine to finish the previous bucket, meets the others at a
// barrier and hands the engine this bucket's metadata; the engine reloads
// it while the next bucket is broadcast.
//
// P2P mode, as verl's kimi_ckpt_engine drives it: before that, every
// training rank takes every T-th full tensor (gathered over its stage's
// ranks), copies it to host memory and registers it with the transfer
// engine (register_checkpoint, inside the update); a barrier and the
// metadata exchange follow.
Result<plan::TransferPlan> checkpointEnginePlan(const SyncProblem& pr, std::string_view name,
                                                bool p2p) {
  miles::ModelShares shares;
  TIDE_ASSIGN_OR_RETURN(plan::TransferPlan p,
                        miles::beginPlan(pr, name, shares, /*fsdpLayouts=*/true));
  Ctx x = miles::makeCtx(pr, shares, p, /*exact=*/true);
  auto& g = x.g;
  const uint16_t sRounds = g.stage(plan::kStageRounds);
  const uint16_t sH2d = g.stage("h2d");
  const uint16_t sCopy = g.stage("ipc_copy");
  const uint16_t sBcast = g.stage("broadcast");
  const uint16_t sSync = g.stage("bucket_sync");
  const uint16_t sLoad = g.stage("engine_reload");
  const auto& il = *pr.infer;
  const int I = il.worldSize(), G = il.tp;
  // The checkpoint as the engines serve it, sharded over the inference
  // ranks' pinned host memory; each rank's shard cut into `rounds` buckets.
  const double W = shares.wireTotal;
  const double bucket = static_cast<double>(std::max<uint64_t>(1, x.o.bucketBytes));
  const int realRounds = std::max(1, static_cast<int>(std::ceil(W / I / bucket)));
  const int rounds = static_cast<int>(
      std::min<int64_t>(realRounds, std::max<int64_t>(1, kMaxSteps / std::max(1, I))));
  x.k = static_cast<double>(realRounds) / rounds;
  miles::StageBytes whole;
  for (const auto& sb : shares.stages) whole += sb;
  const double bytes = W / I / rounds;
  const double keepFrac = W > 0 ? shares.sharePerRank / W : 0;
  const double tensorFrac = bytes / std::max(1.0, W);
  StepId start =
      g.add(plan::StepKind::kControlRound, x.inferBase, kCheckpointEngineOpenRounds, sRounds);
  const int T = pr.train->worldSize();
  if (p2p) start = trainingSide(x, shares, start);
  std::vector<StepId> loaded;
  StepId prev = start;  // the last bucket's hand-off: the loop is sequential
  StepId allDone = g.join();
  for (int r = 0; r < rounds; ++r) {
    // Every rank stages its bucket of this round at once. The step
    // vocabulary has no host-to-device kind: the copy is timed on the
    // PCIe lane of the other direction (docs/designs.md).
    std::vector<StepId> staged(I);
    for (int i = 0; i < I; ++i) {
      if (p2p) {
        // The pull: bucket (r, i) from the owner's host memory into rank
        // i's device buffer (a one-sided transfer on the same path).
        plan::Step rd = miles::sizedStep(plan::StepKind::kHostWrite,
                                         static_cast<uint32_t>((r * I + i) % T), bytes, sH2d);
        rd.peer = x.inferBase + static_cast<uint32_t>(i);
        staged[i] = g.add(rd);
      } else {
        staged[i] =
            g.add(miles::sizedStep(plan::StepKind::kDeviceToHost, x.inferBase + i, bytes, sH2d));
      }
      g.dep(prev, staged[i]);
    }
    for (int o = 0; o < I; ++o) {
      const uint32_t owner = x.inferBase + static_cast<uint32_t>(o);
      StepId copy = g.add(miles::sizedStep(plan::StepKind::kDevicePass, owner, bytes, sCopy));
      g.dep(staged[o], copy);
      g.dep(prev, copy);
      const size_t gidx = loaded.size();
      if (gidx >= static_cast<size_t>(kBuffers)) g.dep(loaded[gidx - kBuffers], copy);
      std::vector<uint32_t> receivers;
      for (int i = 0; i < I; ++i)
        if (i != o) receivers.push_back(x.inferBase + static_cast<uint32_t>(i));
      StepId bc = miles::chainBroadcast(x, owner, receivers, bytes, copy, sBcast);
      // Wait for the engine's previous bucket, barrier, metadata out.
      StepId sync = g.add(plan::StepKind::kControlRound, owner, x.k, sSync);
      g.dep(bc, sync);
      if (gidx >= 1) g.dep(loaded[gidx - 1], sync);
      StepId done = g.join();
      for (int e = 0; e < il.engines; ++e) {
        const uint32_t rank = x.inferBase + static_cast<uint32_t>(e * G);
        StepId ld =
            engineLoad(x, rank, whole.loadTensors * tensorFrac, whole.keptLoadTensors * tensorFrac,
                       whole.scanSteps * tensorFrac, bytes * keepFrac, sync, sLoad);
        g.dep(ld, done);
      }
      g.dep(done, allDone);
      loaded.push_back(done);
      prev = sync;
    }
  }
  g.dep(start, allDone);
  g.dep(prev, allDone);
  miles::finish(x, allDone, kCheckpointEngineCloseRounds);
  TIDE_RETURN_IF_ERROR(p.validate());
  return p;
}

}  // namespace

Result<plan::TransferPlan> CheckpointEngineStrategy::makePlan(const SyncProblem& pr) const {
  return checkpointEnginePlan(pr, name(), /*p2p=*/false);
}

Result<plan::TransferPlan> CheckpointEngineP2pStrategy::makePlan(const SyncProblem& pr) const {
  return checkpointEnginePlan(pr, name(), /*p2p=*/true);
}

}  // namespace tide::sync::designs
