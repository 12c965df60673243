// miles-broadcast (miles_strategies.h).

#include "engine/sync/miles/miles_strategies.h"
#include "engine/sync/miles/miles_update.h"

namespace tide::sync::miles {

namespace {

// Control rounds that close an update: close the session (post-processing
// runs inside it) and continue generation.
constexpr double kBroadcastEndRounds = 2;

}  // namespace

Result<plan::TransferPlan> MilesBroadcastStrategy::makePlan(const SyncProblem& pr) const {
  ModelShares shares;
  TIDE_ASSIGN_OR_RETURN(plan::TransferPlan p, beginPlan(pr, name(), shares));
  // Every bucket is kept: merged buckets would hand the polled engine lock
  // over once per merged bucket, with their gathers between handoffs k
  // times as long.
  Ctx x = makeCtx(pr, shares, p, /*exact=*/true);
  auto& g = x.g;
  StepId start = openRounds(x);
  const BucketStages st = gatherStages(g);
  uint16_t sCall = g.stage("engine_call");
  uint16_t sBcast = g.stage("broadcast");
  uint16_t sLoad = g.stage("engine_load");
  // The framework sleeps between tries of the engines' lock (the profile's
  // lock_poll); its waits count to their own row.
  int32_t lock = g.lock(/*polled=*/true);
  g.locks[lock].stage = g.stage("lock_poll");
  const auto& tl = x.tl;
  std::vector<uint32_t> receivers;
  for (int i = 0; i < x.il.worldSize(); ++i) receivers.push_back(x.inferBase + i);
  StepId done = inPhases(x, start, [&](int s, const StageBytes& sb, StepId after) {
    int nb = stageBuckets(x, sb);
    uint32_t head = static_cast<uint32_t>(s * tl.tp * tl.cp * tl.dp);
    auto ep = epGroup(tl, s), tp = tpGroup(tl, s);
    double bucket = sb.train / nb;
    double wireRatio = sb.wire / sb.train;
    BucketShare share = bucketShare(sb, nb);
    // Every engine rank receives the whole bucket and runs its loader over
    // every tensor of it; one rank per engine stands for its peers.
    double recvOps = sb.loadTensors / nb * kReceiveOps;
    double loadOps = loaderOps(sb.loadTensors / nb, sb.keptLoadTensors / nb, kEngineCopyOps);
    StepId prev = after;
    for (int b = 0; b < nb; ++b) {
      StepId book = hostOps(x, head, gatherOps(x, share.units), 0, st.issue);
      g.dep(prev, book);
      StepId ag = allGather(x, x.expertPhase ? ep : tp, bucket, book, st.gather);
      StepId q = convertBucket(x, head, bucket, sb.quantTrain / nb, share, book, ag, st).gpu;
      StepId call = g.add(plan::StepKind::kControlRound, head, x.k, sCall);
      g.steps[call].acquire = lock;
      g.dep(q, call);
      StepId bc = chainBroadcast(x, head, receivers, bucket * wireRatio, call, sBcast);
      StepId rel = g.join();
      g.steps[rel].release = lock;
      for (int e = 0; e < x.il.engines; ++e) {
        uint32_t rank = x.inferBase + e * x.il.tp;
        StepId recv = hostOps(x, rank, recvOps, 0, sLoad);
        g.dep(call, recv);
        StepId ld = hostOps(x, rank, loadOps, sb.scanSteps / nb, sLoad);
        g.dep(bc, ld);
        g.dep(recv, ld);
        g.dep(ld, rel);
      }
      prev = rel;
    }
    return prev;
  });
  finish(x, done, kBroadcastEndRounds);
  TIDE_RETURN_IF_ERROR(p.validate());
  return p;
}

}  // namespace tide::sync::miles
