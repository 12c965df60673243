// verl-nccl and verl-nixl (design_strategies.h).

#include <algorithm>
#include <cmath>

#include "engine/sync/designs/design_steps.h"
#include "engine/sync/designs/design_strategies.h"

namespace tide::sync::designs {

namespace {

constexpr double kVerlOpenRounds = 1;
constexpr double kVerlCloseRounds = 1;
constexpr int kVerlBuffers = 2;  // double buffering: packing b waits for b-2's broadcast

// NIXL mode: the agents in a line, trainer rank 0 first, then every
// inference rank in order; each reads a whole bucket from the one before
// it into its receive buffer (one read at a time), swaps its two buffers,
// offers the bucket to the next and hands it to its engine
// (verl/checkpoint_engine/nixl_checkpoint_engine.py).
struct Ring {
  std::vector<std::vector<StepId>> hop;  // [bucket][k]: inference rank k's read of it
};

Result<plan::TransferPlan> verlPlan(const SyncProblem& pr, std::string_view name, bool nixl) {
  miles::ModelShares shares;
  TIDE_ASSIGN_OR_RETURN(plan::TransferPlan p,
                        miles::beginPlan(pr, name, shares, /*fsdpLayouts=*/true));
  Ctx x = miles::makeCtx(pr, shares, p, /*exact=*/true);
  auto& g = x.g;
  x.k = 1;
  const uint16_t sRounds = g.stage(plan::kStageRounds);
  const uint16_t sGather = g.stage("gather");
  const uint16_t sToRoot = g.stage("pp_to_root");
  const uint16_t sPack = g.stage("pack");
  const uint16_t sBcast = g.stage(nixl ? "ring_read" : "broadcast");
  const uint16_t sLoad = g.stage("engine_load");
  const auto& tl = *pr.train;
  const auto& il = *pr.infer;
  const int per = tl.tp * tl.cp * tl.dp;
  const uint32_t root = 0;  // the trainer rank in the NCCL group with the engines
  const std::vector<uint32_t> receivers = inferRanks(x);
  const double bucket = static_cast<double>(std::max<uint64_t>(1, x.o.bucketBytes));
  StepId start = g.add(plan::StepKind::kControlRound, x.inferBase, kVerlOpenRounds, sRounds);
  StepId prevGather = start, prevBc = start;
  std::vector<StepId> bcs, loads;
  Ring ring;
  std::vector<std::vector<StepId>> rankLoads;  // NIXL: [bucket][agent k >= 1], its engine load
  StepId allDone = g.join();
  // The tensors stream stage by stage; one rank sends them all.
  for (int s = 0; s < tl.pp; ++s) {
    const miles::StageBytes& sb = shares.stages[s];
    if (sb.wire <= 0) continue;
    const int nb = std::max(1, static_cast<int>(std::ceil(sb.wire / bucket)));
    const double wire = sb.wire / nb;
    const double expertFrac = sb.train > 0 ? sb.trainExpert / sb.train : 0;
    const double train = sb.train / nb;
    const uint32_t head = static_cast<uint32_t>(s * per);
    // verl's default actor is FSDP: a layout of data parallelism alone is
    // read as parameters sharded over all its ranks, gathered per bucket.
    std::vector<uint32_t> denseGroup = miles::tpGroup(tl, s);
    if (tl.tp == 1 && tl.ep == 1 && per > 1) {
      denseGroup.clear();
      for (int r = 0; r < per; ++r) denseGroup.push_back(head + static_cast<uint32_t>(r));
    }
    for (int b = 0; b < nb; ++b) {
      // Full tensors: the non-expert part gathered over TP, the experts
      // over EP (both empty groups under pure data parallelism).
      StepId gathered = g.join();
      x.expertPhase = false;
      const double dense = tl.ep > 1 ? train * (1 - expertFrac) : train;
      g.dep(miles::allGather(x, denseGroup, dense, prevGather, sGather), gathered);
      if (expertFrac > 0 && tl.ep > 1) {
        x.expertPhase = true;
        g.dep(miles::allGather(x, miles::epGroup(tl, s), train * expertFrac, prevGather, sGather),
              gathered);
      }
      StepId atRoot = gathered;
      if (head != root) {
        atRoot = gpuSend(x, head, root, wire, sToRoot);
        g.dep(gathered, atRoot);
      }
      StepId pack = g.add(miles::sizedStep(plan::StepKind::kDevicePass, root, wire, sPack));
      g.dep(atRoot, pack);
      const size_t n = bcs.size();
      const double frac = 1.0 / nb;
      StepId loaded = g.join();
      StepId bc;
      if (!nixl) {
        // Two buffers on each side: bucket b reuses bucket b-2's, free once
        // its broadcast left the sender and every engine loaded it.
        if (n >= static_cast<size_t>(kVerlBuffers)) g.dep(bcs[n - kVerlBuffers], pack);
        StepId ready = g.join();
        if (n >= static_cast<size_t>(kVerlBuffers)) g.dep(loads[n - kVerlBuffers], ready);
        g.dep(pack, ready);
        g.dep(prevBc, ready);
        bc = miles::chainBroadcast(x, root, receivers, wire, ready, sBcast);
        for (int e = 0; e < il.engines; ++e) {
          StepId ld = engineLoad(x, x.inferBase + static_cast<uint32_t>(e * il.tp),
                                 sb.loadTensors * frac, sb.keptLoadTensors * frac,
                                 sb.scanSteps * frac, sb.share * frac, bc, sLoad);
          g.dep(ld, loaded);
        }
      } else {
        // The sender fills bucket b into the buffer bucket b-2 was read
        // from, once the next agent read b-2; it offers b after b-1 is read.
        const size_t I = receivers.size();
        if (n >= static_cast<size_t>(kVerlBuffers)) g.dep(ring.hop[n - kVerlBuffers][0], pack);
        std::vector<StepId> hops(I), lds(I);
        for (size_t k = 0; k < I; ++k) {
          const uint32_t from = k == 0 ? root : receivers[k - 1];
          StepId rd = gpuSend(x, from, receivers[k], wire, sBcast);
          g.dep(k == 0 ? pack : hops[k - 1], rd);
          if (n >= 1) g.dep(ring.hop[n - 1][k], rd);  // one read at a time
          // Its receive buffer held bucket b-2: read on by the next agent
          // and yielded to its engine.
          if (n >= static_cast<size_t>(kVerlBuffers)) {
            if (k + 1 < I) g.dep(ring.hop[n - kVerlBuffers][k + 1], rd);
            g.dep(rankLoads[n - kVerlBuffers][k], rd);
          }
          hops[k] = rd;
          // One rank of an engine loads for its peers (the same bucket).
          const uint32_t local = (receivers[k] - x.inferBase) % static_cast<uint32_t>(il.tp);
          if (local == 0) {
            lds[k] = engineLoad(x, receivers[k], sb.loadTensors * frac, sb.keptLoadTensors * frac,
                                sb.scanSteps * frac, sb.share * frac, rd, sLoad);
          } else {
            lds[k] = rd;
          }
          g.dep(lds[k], loaded);
        }
        ring.hop.push_back(hops);
        rankLoads.push_back(lds);
        bc = hops.back();
      }
      g.dep(loaded, allDone);
      loads.push_back(loaded);
      bcs.push_back(bc);
      prevGather = gathered;
      prevBc = bc;
    }
  }
  g.dep(start, allDone);
  g.dep(prevBc, allDone);
  miles::finish(x, allDone, kVerlCloseRounds);
  TIDE_RETURN_IF_ERROR(p.validate());
  return p;
}

}  // namespace

Result<plan::TransferPlan> VerlNcclStrategy::makePlan(const SyncProblem& pr) const {
  return verlPlan(pr, name(), /*nixl=*/false);
}

Result<plan::TransferPlan> VerlNixlStrategy::makePlan(const SyncProblem& pr) const {
  return verlPlan(pr, name(), /*nixl=*/true);
}

}  // namespace tide::sync::designs
