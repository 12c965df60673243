// nemo-rl-nccl (design_strategies.h).

#include <algorithm>
#include <cmath>

#include "engine/sync/designs/design_steps.h"
#include "engine/sync/designs/design_strategies.h"

namespace tide::sync::designs {

namespace {

// Control rounds: the refit's opening call to the engines (prepare the
// receivers) and its closing one (resume generation), each a remote call
// from the controller.
constexpr double kNemoRlOpenRounds = 1;
constexpr double kNemoRlCloseRounds = 1;
// The two CUDA streams a sender spreads its sends over.
constexpr int kStreams = 2;

// Experts [lo, hi) of `parts` equal parts of `experts`, part `i`.
std::pair<int, int> expertRange(int experts, int parts, int i) {
  return {static_cast<int>(static_cast<int64_t>(experts) * i / parts),
          static_cast<int>(static_cast<int64_t>(experts) * (i + 1) / parts)};
}

}  // namespace

Result<plan::TransferPlan> NemoRlNcclStrategy::makePlan(const SyncProblem& pr) const {
  miles::ModelShares shares;
  TIDE_ASSIGN_OR_RETURN(plan::TransferPlan p, miles::beginPlan(pr, name(), shares));
  const auto& tl = *pr.train;
  const auto& il = *pr.infer;
  const auto& m = *pr.model;
  // Shard to shard needs whole experts on both sides: an expert split over
  // tensor-parallel ranks is re-cut by slices this model does not count.
  if (m.isMoe() && (tl.etp != 1 || il.moeTp() != 1))
    return TIDE_ERROR(Code::kInvalidArgument,
                      "nemo-rl-nccl models whole experts per rank (etp=1 in training, ep=tp in "
                      "the engines); this layout splits experts");
  Ctx x = miles::makeCtx(pr, shares, p, /*exact=*/true);
  auto& g = x.g;
  const uint16_t sRounds = g.stage(plan::kStageRounds);
  const uint16_t sGather = g.stage("tp_gather");
  const uint16_t sBcast = g.stage("packed_broadcast");
  const uint16_t sSend = g.stage("shard_send");
  const uint16_t sLoad = g.stage("engine_load");
  StepId start = g.add(plan::StepKind::kControlRound, x.inferBase, kNemoRlOpenRounds, sRounds);
  const std::vector<uint32_t> receivers = inferRanks(x);
  const int per = tl.tp * tl.cp * tl.dp;
  const int engines = il.engines, G = il.tp;
  StepId allDone = g.join();
  for (int s = 0; s < tl.pp; ++s) {
    const uint32_t head = static_cast<uint32_t>(s * per);
    // Non-expert weights: TP-gathered into packed buckets, broadcast from
    // the stage's first rank to every inference rank; each engine rank
    // keeps its part.
    const miles::StageBytes& ne = shares.phases[0][s];
    StepId prev = start;
    if (ne.train > 0) {
      const int nb = miles::realBuckets(ne);
      x.k = 1;
      x.expertPhase = false;
      const double wire = ne.wire / nb, train = ne.train / nb;
      for (int b = 0; b < nb; ++b) {
        StepId ag = miles::allGather(x, miles::tpGroup(tl, s), train, prev, sGather);
        StepId bc = miles::chainBroadcast(x, head, receivers, wire, ag, sBcast);
        StepId loaded = g.join();
        for (int e = 0; e < engines; ++e) {
          StepId ld =
              engineLoad(x, x.inferBase + e * G, ne.loadTensors / nb, ne.keptLoadTensors / nb,
                         ne.scanSteps / nb * (ne.keptLoadTensors / std::max(1.0, ne.loadTensors)),
                         ne.share / nb, bc, sLoad);
          g.dep(ld, loaded);
        }
        g.dep(loaded, allDone);
        prev = bc;  // the next bucket's gather reuses the send buffer
      }
    }
    // Routed experts: each sender (the stage's expert-DP replica chosen by
    // the engine) sends every inference rank the experts it holds of them,
    // straight from GPU memory, its sends spread over two streams.
    const miles::StageBytes& ex = shares.phases[1][s];
    if (ex.train <= 0 || m.experts <= 0) continue;
    const int E = m.experts, Et = tl.ep, Ei = il.ep;
    const int edp = tl.edp();
    const double perExpert = ex.wire / E;
    // The stage's rank holding expert coordinate (ep, edp).
    std::vector<int> owner(static_cast<size_t>(Et) * edp, -1);
    for (int r = 0; r < per; ++r) {
      workloads::TrainCoord c = workloads::trainCoord(tl, s * per + r);
      if (c.etp == 0) owner[static_cast<size_t>(c.ep) * edp + c.edp] = r;
    }
    // What each sender sends: (engine, plan rank, bytes), engine by engine.
    struct Send {
      int engine;
      uint32_t dst;
      double bytes;
    };
    std::vector<std::vector<Send>> bySender(per);
    std::vector<double> kept(static_cast<size_t>(engines) * G, 0);
    for (int e = 0; e < engines; ++e) {
      for (int j = 0; j < G; ++j) {
        const int ie = workloads::inferCoord(il, e * G + j).ep;
        auto [ilo, ihi] = expertRange(E, Ei, ie);
        for (int k = 0; k < Et; ++k) {
          auto [tlo, thi] = expertRange(E, Et, k);
          const int overlap = std::min(ihi, thi) - std::max(ilo, tlo);
          if (overlap <= 0) continue;
          const int local = owner[static_cast<size_t>(k) * edp + e % edp];
          if (local < 0)
            return TIDE_ERROR(Code::kInternal, "nemo-rl-nccl: no rank holds an expert shard");
          const double bytes = perExpert * overlap;
          bySender[local].push_back({e, x.inferBase + static_cast<uint32_t>(e * G + j), bytes});
          kept[static_cast<size_t>(e) * G + j] += bytes;
        }
      }
    }
    std::vector<StepId> got(static_cast<size_t>(engines) * G);
    for (auto& id : got) id = g.join();
    // Each sender's sends alternate over its two streams, starting at an
    // engine rotated by its rank and stage so that the first sends of all
    // senders do not land on one engine (an assumption: the refit's send
    // order is not taken from its code; docs/designs.md).
    for (int local = 0; local < per; ++local) {
      auto& list = bySender[local];
      if (list.empty()) continue;
      const int first = (local + s) % engines;
      std::stable_sort(list.begin(), list.end(), [&](const Send& a, const Send& b) {
        return (a.engine - first + engines) % engines < (b.engine - first + engines) % engines;
      });
      const uint32_t src = static_cast<uint32_t>(s * per + local);
      std::vector<StepId> tail(kStreams, prev);
      for (size_t n = 0; n < list.size(); ++n) {
        StepId snd = gpuSend(x, src, list[n].dst, list[n].bytes, sSend);
        g.dep(tail[n % kStreams], snd);
        tail[n % kStreams] = snd;
        g.dep(snd, got[list[n].dst - x.inferBase]);
      }
    }
    for (int e = 0; e < engines; ++e) {
      for (int j = 0; j < G; ++j) {
        const size_t i = static_cast<size_t>(e) * G + j;
        // Only the engine's first rank loads for its peers (they load at once).
        if (j != 0) {
          g.dep(got[i], allDone);
          continue;
        }
        const double frac = ex.wire > 0 ? kept[i] / ex.wire : 0;
        StepId ld =
            engineLoad(x, x.inferBase + static_cast<uint32_t>(i), ex.loadTensors * frac,
                       ex.keptLoadTensors * frac, ex.scanSteps * frac, kept[i], got[i], sLoad);
        g.dep(ld, allDone);
      }
    }
  }
  g.dep(start, allDone);
  miles::finish(x, allDone, kNemoRlCloseRounds);
  TIDE_RETURN_IF_ERROR(p.validate());
  return p;
}

}  // namespace tide::sync::designs
