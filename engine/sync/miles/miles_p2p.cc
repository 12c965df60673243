// miles-p2p (miles_strategies.h).

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "engine/sync/miles/miles_strategies.h"
#include "engine/sync/miles/miles_update.h"

namespace tide::sync::miles {

namespace {

// Closing rounds: close the session, continue generation, and bump the
// weight version.
constexpr double kP2pEndRounds = 3;

// Targets of one training rank of a stage, grouped by engine rank: the rank
// keeps one CPU replica buffer and reloads it once per engine rank it serves;
// the engines of one engine rank read the same load.
struct ReplicaGroup {
  int engineRank = 0;
  std::vector<uint32_t> targets;  // plan ranks
};

// Source -> target assignment of the framework's p2p path: targets (engine,
// engine rank) in order; the first `m` go round-robin to the stage's m
// training ranks, each further target to the least-loaded rank that already
// serves the same engine rank (else round-robin).
std::vector<std::vector<ReplicaGroup>> assignTargets(const Ctx& x, int m) {
  const auto& il = x.il;
  int G = il.tp;
  std::vector<std::vector<ReplicaGroup>> out(m);
  std::vector<int> load(m, 0);
  auto add = [&](int src, int e, int j) {
    auto& groups = out[src];
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const ReplicaGroup& gr) { return gr.engineRank == j; });
    if (it == groups.end()) it = groups.insert(groups.end(), ReplicaGroup{j, {}});
    it->targets.push_back(x.inferBase + e * G + j);
    ++load[src];
  };
  int next = 0, rr = 0;
  for (int e = 0; e < il.engines; ++e) {
    for (int j = 0; j < G; ++j, ++next) {
      if (next < m) {
        add(next, e, j);
        continue;
      }
      int best = -1;
      for (int r = 0; r < m; ++r) {
        bool serves = std::any_of(out[r].begin(), out[r].end(),
                                  [&](const ReplicaGroup& gr) { return gr.engineRank == j; });
        if (serves && (best < 0 || load[r] < load[best])) best = r;
      }
      add(best >= 0 ? best : rr++ % m, e, j);
    }
  }
  return out;
}

}  // namespace

Result<plan::TransferPlan> MilesP2pStrategy::makePlan(const SyncProblem& pr) const {
  ModelShares shares;
  TIDE_ASSIGN_OR_RETURN(plan::TransferPlan p, beginPlan(pr, name(), shares));
  Ctx x = makeCtx(pr, shares, p, /*exact=*/false);
  auto& g = x.g;
  StepId start = openRounds(x);
  const auto& tl = x.tl;
  const BucketStages st = gatherStages(g);
  uint16_t sMap = g.stage("name_map");
  uint16_t sLoad = g.stage("replica_load");
  uint16_t sD2h = g.stage("d2h");
  uint16_t sWrite = g.stage("rdma_write");
  uint16_t sReg = g.stage(plan::kStageRegister);
  int per = tl.tp * tl.cp * tl.dp;
  bool pipelined = x.o.pipelined;
  StepId allDone = g.join();
  auto groups = assignTargets(x, per);
  // First update: every sending rank pins and registers its CPU replica —
  // the whole engine rank's model, whatever its stage sends — while the
  // engines are paused, and all ranks meet at a barrier before gathering.
  StepId begin = start;
  if (x.o.firstUpdate) {
    begin = g.join();
    double pages = std::ceil(shares.sharePerRank / static_cast<double>(x.o.pageBytes));
    for (int s = 0; s < tl.pp; ++s) {
      for (int r = 0; r < per; ++r) {
        if (groups[r].empty()) continue;
        StepId reg =
            g.add(plan::StepKind::kRegister, static_cast<uint32_t>(s * per + r), pages, sReg);
        g.dep(start, reg);
        g.dep(reg, begin);
      }
    }
    g.dep(start, begin);
  }
  StepId done = inPhases(x, begin, [&](int s, const StageBytes& sb, StepId after) {
    int nb = stageBuckets(x, sb);
    auto ep = epGroup(tl, s), tp = tpGroup(tl, s);
    double bucket = sb.train / nb;
    double wireRatio = sb.wire / sb.train;
    double shareFrac = sb.wire > 0 ? sb.share / sb.wire : 0;
    double quantFrac = sb.train > 0 ? sb.quantTrain / sb.train : 0;
    // Per bucket: every rank converts (and, with FP8, quantizes) every
    // gathered tensor; each replica load runs the loader over every tensor
    // and scale, and copies the kept ones (narrow, copy, synchronize).
    BucketShare share = bucketShare(sb, nb);
    double bookOps = gatherOps(x, share.units);
    double loadOps = loaderOps(sb.loadTensors / nb, sb.keptLoadTensors / nb, kReplicaCopyOps);
    double loadSteps = sb.scanSteps / nb;
    // Before any load, the framework maps every tensor of the bucket to the
    // replica parameter it completes; a static schedule knows that.
    double mapSteps = pipelined ? 0 : sb.mapSteps / nb;
    // A replica parameter (e.g. all local experts' w13 of a layer) is loaded
    // and written once all its pieces arrived: gathered expert buckets
    // interleave the EP ranks' experts, so that is at the end of each MoE
    // layer; a non-expert bucket holds whole parameters.
    int layers = std::max(1, static_cast<int>(sb.moeLayers));
    StepId prevAg = after, prevSync = after;
    int pendingBuckets = 0;
    for (int b = 0; b < nb; ++b) {
      ++pendingBuckets;
      bool flush =
          pipelined || !x.expertPhase || b + 1 == nb ||
          (static_cast<int64_t>(b + 1) * layers / nb) != (static_cast<int64_t>(b) * layers / nb);
      // The next all-gather is a collective: it starts when every rank has
      // finished the synchronous part of the previous bucket and issued it.
      StepId agIn = g.join();
      g.dep(prevAg, agIn);
      std::vector<StepId> books(per, agIn);
      for (int r = 0; r < per; ++r) {
        if (groups[r].empty()) continue;
        books[r] = hostOps(x, static_cast<uint32_t>(s * per + r), bookOps, 0, st.issue);
        g.dep(prevSync, books[r]);
        g.dep(books[r], agIn);
      }
      g.dep(prevSync, agIn);
      StepId ag = allGather(x, x.expertPhase ? ep : tp, bucket, agIn, st.gather);
      StepId syncJoin = g.join();
      double wire = bucket * wireRatio;
      for (int r = 0; r < per; ++r) {
        if (groups[r].empty()) continue;
        uint32_t rank = static_cast<uint32_t>(s * per + r);
        // A static schedule quantizes only what this rank sends; the
        // framework converts the whole gathered bucket on every rank.
        double qBytes = bucket * quantFrac * (pipelined ? shareFrac * groups[r].size() : 1);
        Converted cv = convertBucket(x, rank, bucket, qBytes, share, books[r], ag, st);
        // The name mapping is host work after the conversion, while the GPU
        // may still quantize; the loads' copies wait for both.
        StepId prev = g.join();
        g.dep(cv.gpu, prev);
        if (mapSteps > 0) {
          StepId mp = hostOps(x, rank, 0, mapSteps, sMap);
          g.dep(cv.host, mp);
          g.dep(mp, prev);
        } else {
          g.dep(cv.host, prev);
        }
        double held = wire * shareFrac * pendingBuckets;  // one engine rank's new bytes
        for (size_t gi = 0; flush && gi < groups[r].size(); ++gi) {
          StepId ld = hostOps(x, rank, loadOps * pendingBuckets, loadSteps * pendingBuckets, sLoad);
          g.dep(prev, ld);
          StepId d = g.add(sizedStep(plan::StepKind::kDeviceToHost, rank, held, sD2h));
          g.dep(ld, d);
          // Writes read the pinned replica from host memory.
          StepId written = g.join();
          for (uint32_t t : groups[r][gi].targets) {
            plan::Step ws = sizedStep(plan::StepKind::kHostWrite, rank, held, sWrite);
            ws.peer = t;
            StepId w = g.add(ws);
            g.dep(d, w);
            g.dep(w, written);
          }
          g.dep(written, allDone);
          // The buffer is reloaded for the next engine rank only after its
          // writes finished; the last engine rank's writes run in the
          // background while the next bucket is gathered.
          bool last = gi + 1 == groups[r].size();
          prev = last ? d : written;
        }
        g.dep(prev, syncJoin);
      }
      if (flush) pendingBuckets = 0;
      prevAg = ag;
      prevSync = syncJoin;
    }
    StepId end = g.join();
    g.dep(prevAg, end);
    g.dep(prevSync, end);
    return end;
  });
  g.dep(done, allDone);
  finish(x, allDone, kP2pEndRounds);
  TIDE_RETURN_IF_ERROR(p.validate());
  return p;
}

}  // namespace tide::sync::miles
