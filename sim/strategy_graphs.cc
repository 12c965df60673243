#include "sim/strategy_graphs.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "sim/fp8_pass.h"

namespace tide::sim {

namespace {

// Eager tensor operations per checkpoint tensor in the per-tensor passes
// (each costs Calibration::hostOpSeconds of host time). Conversion: rename
// and split/concatenate (2), plus, only when FP8 goes on the wire, block
// quantization: the RL framework's H100 path allocates the FP8 output and
// the scales and launches one Triton kernel per tensor (3; a Triton launch
// from Python costs about one eager op, docs/sources.md); a bf16 update sends
// the converted tensors as they are. Replica loader: one call per tensor, and
// for a kept tensor narrow, copy to pinned memory and the copy's
// synchronization.
constexpr double kConvertOps = 2;
constexpr double kQuantizeOps = 3;
constexpr double kLoaderCallOps = 1;
constexpr double kLoaderCopyOps = 3;
// An engine rank receiving a broadcast bucket: per tensor an allocation and a
// broadcast call (issued while the bytes arrive); its loader then narrows and
// copies the tensors it keeps, on the device (no synchronization).
constexpr double kReceiveOps = 2;
constexpr double kEngineCopyOps = 2;
// Device copies after a gather, per gathered byte. PyTorch's NCCL all-gather
// into a list of tensors (Miles' EP gather of experts) gathers into one flat
// buffer and copies every slice out; a TP-gathered tensor (all_gather_param)
// is concatenated once more, also at TP 1 (a one-element gather and cat).
// A copy reads and writes each byte.
constexpr double kExpertGatherCopies = 1;
constexpr double kDenseGatherCopies = 2;
// Control rounds to every engine around an update (the RL framework's
// update_weights): pause generation, flush the cache and open the update
// session before; close the session (post-processing runs inside it) and
// continue generation after. p2p bumps the weight version in one more round.
constexpr double kStartRounds = 3;
constexpr double kEndRounds = 2;

struct Ctx {
  const Scenario& sc;
  const ModelShares& shares;
  const Topology& topo;
  WorkGraph& g;
  int channels = 1;
  int inferBase = 0;   // GPU id of inference rank 0
  double k = 1;        // merge factor
  int maxBuckets = 0;  // simulated buckets per stage and phase, at most
  // Which update phase is being built: the non-expert weights (TP-gathered
  // one by one) or, after a barrier of all ranks, the routed experts
  // (EP-gathered by bucket).
  bool expertPhase = false;
};

// Host ops of one bucket's gathers on every rank of the stage, over its
// gather units (model_shares.h). Experts: the names are exchanged first (an
// object all-gather: two collectives, then a buffer and a host copy per EP
// rank), then each local unit is gathered into EP freshly allocated outputs
// (EP allocations and one collective). Non-expert weights: each is gathered
// over TP on its own (TP allocations, one collective, one concatenation).
// `k` real buckets make one simulated bucket.
double gatherOps(const Ctx& x, double unitsInBucket) {
  const auto& tl = x.sc.train;
  if (!x.expertPhase) return unitsInBucket * (tl.tp + 2);
  return (2 + 2.0 * tl.ep) * x.k + unitsInBucket * (tl.ep + 1);
}

// Host time of a weight loader over `tensors` handed to it (a call each and
// the name matching, loader_scan.h), `kept` of which it copies with
// `copyOps` operations each.
double loaderSeconds(const Ctx& x, double tensors, double kept, double copyOps, double steps) {
  return (tensors * kLoaderCallOps + kept * copyOps) * x.sc.calib.hostOpSeconds +
         steps * x.sc.calib.pyStepSeconds;
}

// Host time of one bucket's gather bookkeeping, which issues its gathers.
double bookkeepingSeconds(const Ctx& x, double unitsInBucket) {
  return gatherOps(x, unitsInBucket) * x.sc.calib.hostOpSeconds;
}

// A bucket's share of its stage's phase, one real bucket's worth.
struct BucketShare {
  double tensors, quantTensors, units;
};
BucketShare bucketShare(const StageBytes& sb, int nb) {
  return {sb.tensors / nb, sb.quantTensors / nb, sb.units / nb};
}

// Host time of one bucket's per-tensor conversion and, for the tensors it
// quantizes, the quantization kernel's allocations and launch.
double convertSeconds(const Ctx& x, const BucketShare& b) {
  return (b.tensors * kConvertOps + b.quantTensors * kQuantizeOps) * x.sc.calib.hostOpSeconds;
}

// FP8 quantization of `bytes` (BF16, only the tensors that are quantized) on
// `gpu` after `after`; a bf16 update has none, and `after` itself is
// returned. The kernel's pass through the GPU's memory (fp8_pass.h) is timed
// by `hbm`; without that figure it is not a limit.
TaskId quantize(Ctx& x, int gpu, double bytes, TaskId after, uint16_t stage) {
  if (!x.sc.strategy.fp8Wire) return after;
  double moved = fp8PassBytes(bytes, x.sc.model.fp8Block);
  TaskId q = x.g.addFlow(x.g.addPath(onlyLink(x.topo.gpu(gpu).hbm)), moved, 0, gpu, gpu, stage,
                         TaskPath::kCompute);
  x.g.dep(after, q);
  return q;
}

// Orders `members` node by node, rotating each node's GPUs by `c`, so that
// channel c enters and leaves every node through a different GPU and NIC.
std::vector<int> channelOrder(const Topology& topo, const std::vector<int>& members, int c) {
  std::vector<int> out;
  size_t i = 0;
  while (i < members.size()) {
    size_t j = i;
    while (j < members.size() && topo.nodeOf(members[j]) == topo.nodeOf(members[i])) ++j;
    size_t n = j - i;
    for (size_t q = 0; q < n; ++q) out.push_back(members[i + (q + c) % n]);
    i = j;
  }
  return out;
}

// Ring all-gather of `bytesOut` gathered bytes among `members`: per channel
// one flow over every ring edge (the edges advance in lockstep), carrying
// (n-1)/n of the channel's share. Returns a join that completes with it.
TaskId ringAllGather(Ctx& x, const std::vector<int>& members, double bytesOut, TaskId after,
                     uint16_t stage) {
  TaskId join = x.g.addJoin();
  size_t n = members.size();
  if (n <= 1 || bytesOut <= 0) {
    x.g.dep(after, join);
    return join;
  }
  for (int c = 0; c < x.channels; ++c) {
    std::vector<int> order = channelOrder(x.topo, members, c);
    std::vector<LinkId> links;
    double lat = 0;
    for (size_t i = 0; i < n; ++i) {
      int a = order[i], b = order[(i + 1) % n];
      x.topo.appendPath(a, b, links);
      lat = std::max(lat, x.topo.latency(a, b));
    }
    double bytes = bytesOut * static_cast<double>(n - 1) / n / x.channels;
    TaskId f = x.g.addFlow(x.g.addPath(std::move(links)), bytes, lat * (n - 1) * x.k, order[0],
                           order[1], stage, TaskPath::kNccl);
    x.g.dep(after, f);
    x.g.dep(f, join);
  }
  return join;
}

// The device copies on `gpu` after a bucket's gathers, over the GPU's
// memory bandwidth; none where it is not a limit.
TaskId gatherCopy(Ctx& x, int gpu, double bucket, TaskId after, uint16_t stage) {
  std::vector<LinkId> hbm = onlyLink(x.topo.gpu(gpu).hbm);
  if (hbm.empty() || bucket <= 0) return after;
  double bytes = 2 * bucket * (x.expertPhase ? kExpertGatherCopies : kDenseGatherCopies);
  TaskId c =
      x.g.addFlow(x.g.addPath(std::move(hbm)), bytes, 0, gpu, gpu, stage, TaskPath::kCompute);
  x.g.dep(after, c);
  return c;
}

// Stage ids of a bucket's work after its gathers.
struct BucketStages {
  uint16_t copy, convert, quant;
};

// The end of a rank's host work on a bucket and of its GPU work on it.
struct Converted {
  TaskId host, gpu;
};

// One rank's work on a gathered bucket. The host issues the gathers
// (`book`), then converts the bucket while the GPU gathers and copies it:
// CUDA runs kernels asynchronously, and conversion only queues work behind
// the gathers (views, a split, the quantization launches). The quantization
// runs once both are done, over `quantBytes` (a bf16 update has none).
Converted convertBucket(Ctx& x, int gpu, double bucket, double quantBytes, const BucketShare& share,
                        TaskId book, TaskId gathered, BucketStages st) {
  TaskId conv = x.g.addDelay(convertSeconds(x, share), gpu, st.convert);
  x.g.dep(book, conv);
  TaskId ready = x.g.addJoin();
  x.g.dep(conv, ready);
  x.g.dep(gatherCopy(x, gpu, bucket, gathered, st.copy), ready);
  return {conv, quantize(x, gpu, quantBytes, ready, st.quant)};
}

// Chain (ring-pipelined) broadcast from `root` to `receivers`, per channel one
// flow over all hops; the pipeline fill is one chunk per hop.
TaskId chainBroadcast(Ctx& x, int root, const std::vector<int>& receivers, double bytes,
                      TaskId after, uint16_t stage) {
  TaskId join = x.g.addJoin();
  double chunk = static_cast<double>(x.sc.strategy.chunkBytes);
  for (int c = 0; c < x.channels; ++c) {
    std::vector<int> order = channelOrder(x.topo, receivers, c);
    std::vector<LinkId> links;
    double fill = 0;
    int prev = root;
    for (int r : order) {
      x.topo.appendPath(prev, r, links);
      double cap = x.topo.hopCapacity(prev, r);
      fill += x.topo.latency(prev, r) + (cap > 0 ? chunk * x.channels / cap : 0);
      prev = r;
    }
    TaskId f = x.g.addFlow(x.g.addPath(std::move(links)), bytes / x.channels, fill * x.k, root,
                           order.empty() ? root : order[0], stage, TaskPath::kNccl);
    x.g.dep(after, f);
    x.g.dep(f, join);
  }
  return join;
}

// Buckets of a stage's phase as the RL framework cuts them (model_shares.h).
int realBuckets(const StageBytes& sb) {
  return std::max(1, static_cast<int>(sb.buckets));
}

// Merge factor of a phase of `real` buckets: more than x.maxBuckets are
// merged into that many simulated buckets.
double mergeFactor(const Ctx& x, int real) {
  return static_cast<double>(real) / std::min(real, x.maxBuckets);
}

// Simulated buckets of a stage's phase; x.k scales their per-bucket fixed
// costs.
int stageBuckets(Ctx& x, const StageBytes& sb) {
  int real = realBuckets(sb);
  x.k = mergeFactor(x, real);
  return std::min(real, x.maxBuckets);
}

std::vector<int> epGroup(const workloads::TrainLayout& l, int pp) {
  int per = l.tp * l.cp * l.dp;
  std::vector<int> v;
  for (int e = 0; e < l.ep; ++e) v.push_back(pp * per + l.etp * e);
  return v;
}

std::vector<int> tpGroup(const workloads::TrainLayout& l, int pp) {
  int per = l.tp * l.cp * l.dp;
  std::vector<int> v;
  for (int t = 0; t < l.tp; ++t) v.push_back(pp * per + t);
  return v;
}

// Post-processing and the closing control rounds after `allDone`; returns
// the final task. Every inference rank re-quantizes the MLA layers of a model
// served in FP8 (calibration.h); a broadcast engine does it inside the call
// that loads a layer's kv_b_proj, which is as serial on the engine chain.
TaskId finish(Ctx& x, TaskId allDone, double endRounds) {
  const auto& il = x.sc.infer;
  const auto& m = x.sc.model;
  uint16_t post = x.g.stageId(kStagePostprocess);
  uint16_t resume = x.g.stageId(kStageRounds);
  TaskId postJoin = x.g.addJoin();
  bool requant =
      m.attention == workloads::AttentionType::kMla && m.inferDtype == workloads::DType::kFP8E4M3;
  double postSec = requant ? m.layers * x.sc.calib.mlaRequantSeconds : 0;
  for (int i = 0; i < il.worldSize(); ++i) {
    TaskId p = x.g.addDelay(postSec, x.inferBase + i, post);
    x.g.dep(allDone, p);
    x.g.dep(p, postJoin);
  }
  TaskId r = x.g.addDelay(x.sc.calib.engineCallSeconds * endRounds, x.inferBase, resume);
  x.g.dep(postJoin, r);
  return r;
}

// Both strategies update in two phases, as the RL framework does: every
// stage's non-expert weights, a barrier of all ranks, then the routed
// experts. `stage(s, bytes, after)` builds stage s's buckets of the current
// phase, starting after `after`, and returns the task that ends them.
template <class StageFn>
TaskId inPhases(Ctx& x, TaskId start, StageFn stage) {
  TaskId phaseStart = start;
  for (int ph = 0; ph < 2; ++ph) {
    x.expertPhase = ph == 1;
    TaskId barrier = x.g.addJoin();
    x.g.dep(phaseStart, barrier);
    for (int s = 0; s < x.sc.train.pp; ++s) {
      const StageBytes& sb = x.shares.phases[ph][s];
      if (sb.train > 0) x.g.dep(stage(s, sb, phaseStart), barrier);
    }
    phaseStart = barrier;
  }
  return phaseStart;
}

void buildBroadcast(Ctx& x, TaskId start) {
  const auto& tl = x.sc.train;
  uint16_t sGather = x.g.stageId("allgather");
  uint16_t sCopy = x.g.stageId("gather_copy");
  uint16_t sIssue = x.g.stageId("gather_issue");
  uint16_t sConvert = x.g.stageId("convert_host");
  uint16_t sQuant = x.g.stageId("quantize");
  uint16_t sCall = x.g.stageId("engine_call");
  uint16_t sBcast = x.g.stageId("broadcast");
  uint16_t sLoad = x.g.stageId("engine_load");
  double poll = x.sc.calib.lockPollSeconds;
  int32_t lock = poll > 0 ? x.g.addPolledLock(poll, x.g.stageId("lock_poll")) : x.g.addLock();
  std::vector<int> receivers;
  for (int i = 0; i < x.sc.infer.worldSize(); ++i) receivers.push_back(x.inferBase + i);
  TaskId done = inPhases(x, start, [&](int s, const StageBytes& sb, TaskId after) {
    int nb = stageBuckets(x, sb);
    int head = s * tl.tp * tl.cp * tl.dp;
    auto ep = epGroup(tl, s), tp = tpGroup(tl, s);
    double bucket = sb.train / nb;
    double wireRatio = sb.wire / sb.train;
    BucketShare share = bucketShare(sb, nb);
    TaskId prev = after;
    for (int b = 0; b < nb; ++b) {
      TaskId book = x.g.addDelay(bookkeepingSeconds(x, share.units), head, sIssue);
      x.g.dep(prev, book);
      TaskId ag = ringAllGather(x, x.expertPhase ? ep : tp, bucket, book, sGather);
      TaskId q = convertBucket(x, head, bucket, sb.quantTrain / nb, share, book, ag,
                               {sCopy, sConvert, sQuant})
                     .gpu;
      TaskId call = x.g.addDelay(x.sc.calib.engineCallSeconds * x.k, head, sCall);
      x.g.tasks()[call].acquire = lock;
      x.g.dep(q, call);
      double wire = bucket * wireRatio;
      TaskId bc = chainBroadcast(x, head, receivers, wire, call, sBcast);
      TaskId rel = x.g.addJoin();
      x.g.tasks()[rel].release = lock;
      // Every engine rank receives the whole bucket and runs its loader over
      // every tensor of it; one rank per engine stands for its peers.
      double recvSec = sb.loadTensors / nb * kReceiveOps * x.sc.calib.hostOpSeconds;
      double loadSec = loaderSeconds(x, sb.loadTensors / nb, sb.keptLoadTensors / nb,
                                     kEngineCopyOps, sb.scanSteps / nb);
      for (int e = 0; e < x.sc.infer.engines; ++e) {
        int rank = x.inferBase + e * x.sc.infer.tp;
        TaskId recv = x.g.addDelay(recvSec, rank, sLoad);
        x.g.dep(call, recv);
        TaskId ld = x.g.addDelay(loadSec, rank, sLoad);
        x.g.dep(bc, ld);
        x.g.dep(recv, ld);
        x.g.dep(ld, rel);
      }
      prev = rel;
    }
    return prev;
  });
  finish(x, done, kEndRounds);
}

// Targets of one training rank of a stage, grouped by engine rank: the rank
// keeps one CPU replica buffer and reloads it once per engine rank it serves;
// the engines of one engine rank read the same load.
struct ReplicaGroup {
  int engineRank = 0;
  std::vector<int> targets;  // GPU ids
};

// Source -> target assignment of the RL framework's p2p path: targets
// (engine, engine rank) in order; the first `m` go round-robin to the stage's
// m training ranks, each further target to the least-loaded rank that already
// serves the same engine rank (else round-robin).
std::vector<std::vector<ReplicaGroup>> assignTargets(const Ctx& x, int m) {
  const auto& il = x.sc.infer;
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

void buildP2p(Ctx& x, TaskId start, GraphInfo& info) {
  const auto& tl = x.sc.train;
  uint16_t sGather = x.g.stageId("allgather");
  uint16_t sCopy = x.g.stageId("gather_copy");
  uint16_t sIssue = x.g.stageId("gather_issue");
  uint16_t sConvert = x.g.stageId("convert_host");
  uint16_t sQuant = x.g.stageId("quantize");
  uint16_t sMap = x.g.stageId("name_map");
  uint16_t sLoad = x.g.stageId("replica_load");
  uint16_t sD2h = x.g.stageId("d2h");
  uint16_t sWrite = x.g.stageId("rdma_write");
  uint16_t sReg = x.g.stageId(kStageRegister);
  int per = tl.tp * tl.cp * tl.dp;
  bool pipelined = x.sc.strategy.pipelined;
  TaskId allDone = x.g.addJoin();
  auto groups = assignTargets(x, per);
  // First update: every sending rank pins and registers its CPU replica —
  // the whole engine rank's model, whatever its stage sends — while the
  // engines are paused, and all ranks meet at a barrier before gathering.
  TaskId begin = start;
  if (x.sc.strategy.firstUpdate) {
    begin = x.g.addJoin();
    double pages = std::ceil(x.shares.sharePerRank / static_cast<double>(x.sc.strategy.pageBytes));
    double sec = pages * x.sc.calib.registerPerPageSeconds;
    for (int s = 0; s < tl.pp; ++s) {
      for (int r = 0; r < per; ++r) {
        if (groups[r].empty()) continue;
        info.registrationSeconds = std::max(info.registrationSeconds, sec);
        TaskId reg = x.g.addDelay(sec, s * per + r, sReg);
        x.g.dep(start, reg);
        x.g.dep(reg, begin);
      }
    }
    x.g.dep(start, begin);
  }
  TaskId done = inPhases(x, begin, [&](int s, const StageBytes& sb, TaskId after) {
    int nb = stageBuckets(x, sb);
    auto ep = epGroup(tl, s), tp = tpGroup(tl, s);
    double bucket = sb.train / nb;
    double wireRatio = sb.wire / sb.train;
    double shareFrac = sb.wire > 0 ? sb.share / sb.wire : 0;
    double quantFrac = sb.train > 0 ? sb.quantTrain / sb.train : 0;
    // Host time per bucket: every rank converts (and, with FP8, quantizes)
    // every gathered tensor; each replica load runs the loader over every
    // tensor and scale, and copies the kept ones (narrow, copy, synchronize).
    BucketShare share = bucketShare(sb, nb);
    double bookSec = bookkeepingSeconds(x, share.units);
    double loadSecPerBucket = loaderSeconds(x, sb.loadTensors / nb, sb.keptLoadTensors / nb,
                                            kLoaderCopyOps, sb.scanSteps / nb);
    // Before any load, the RL framework maps every tensor of the bucket to
    // the replica parameter it completes; a static schedule knows that.
    double mapSec = pipelined ? 0 : sb.mapSteps / nb * x.sc.calib.pyStepSeconds;
    // A replica parameter (e.g. all local experts' w13 of a layer) is loaded
    // and written once all its pieces arrived: gathered expert buckets
    // interleave the EP ranks' experts, so that is at the end of each MoE
    // layer; a non-expert bucket holds whole parameters.
    int layers = std::max(1, static_cast<int>(sb.moeLayers));
    TaskId prevAg = after, prevSync = after;
    int pendingBuckets = 0;
    for (int b = 0; b < nb; ++b) {
      ++pendingBuckets;
      bool flush =
          pipelined || !x.expertPhase || b + 1 == nb ||
          (static_cast<int64_t>(b + 1) * layers / nb) != (static_cast<int64_t>(b) * layers / nb);
      // The next all-gather is a collective: it starts when every rank has
      // finished the synchronous part of the previous bucket and issued it.
      TaskId agIn = x.g.addJoin();
      x.g.dep(prevAg, agIn);
      std::vector<TaskId> books(per, agIn);
      for (int r = 0; r < per; ++r) {
        if (groups[r].empty()) continue;
        books[r] = x.g.addDelay(bookSec, s * per + r, sIssue);
        x.g.dep(prevSync, books[r]);
        x.g.dep(books[r], agIn);
      }
      x.g.dep(prevSync, agIn);
      TaskId ag = ringAllGather(x, x.expertPhase ? ep : tp, bucket, agIn, sGather);
      TaskId syncJoin = x.g.addJoin();
      double wire = bucket * wireRatio;
      for (int r = 0; r < per; ++r) {
        if (groups[r].empty()) continue;
        int gpu = s * per + r;
        int node = x.topo.nodeOf(gpu);
        // A static schedule quantizes only what this rank sends; the RL
        // framework converts the whole gathered bucket on every rank.
        double qBytes = bucket * quantFrac * (pipelined ? shareFrac * groups[r].size() : 1);
        Converted cv =
            convertBucket(x, gpu, bucket, qBytes, share, books[r], ag, {sCopy, sConvert, sQuant});
        // The name mapping is host work after the conversion, while the GPU
        // may still quantize; the loads' copies wait for both.
        TaskId prev = x.g.addJoin();
        x.g.dep(cv.gpu, prev);
        if (mapSec > 0) {
          TaskId mp = x.g.addDelay(mapSec, gpu, sMap);
          x.g.dep(cv.host, mp);
          x.g.dep(mp, prev);
        } else {
          x.g.dep(cv.host, prev);
        }
        double held = wire * shareFrac * pendingBuckets;  // one engine rank's new bytes
        for (size_t gi = 0; flush && gi < groups[r].size(); ++gi) {
          TaskId ld = x.g.addDelay(loadSecPerBucket * pendingBuckets, gpu, sLoad);
          x.g.dep(prev, ld);
          std::vector<LinkId> d2hPath = onlyLink(x.topo.gpu(gpu).d2h);
          for (LinkId l : onlyLink(x.topo.hostMem(node))) d2hPath.push_back(l);
          TaskId d = x.g.addFlow(x.g.addPath(std::move(d2hPath)), held, 0, gpu, gpu, sD2h,
                                 TaskPath::kPcieD2H);
          x.g.dep(ld, d);
          // Writes read the pinned replica from host memory.
          TaskId written = x.g.addJoin();
          for (int t : groups[r][gi].targets) {
            std::vector<LinkId> wPath = onlyLink(x.topo.hostMem(node));
            x.topo.appendRdmaPath(gpu, t, wPath);
            TaskId w = x.g.addFlow(x.g.addPath(std::move(wPath)), held, x.topo.rdmaLatency(gpu, t),
                                   gpu, t, sWrite, TaskPath::kRdma);
            x.g.dep(d, w);
            x.g.dep(w, written);
          }
          x.g.dep(written, allDone);
          // The buffer is reloaded for the next engine rank only after its
          // writes finished; the last engine rank's writes run in the
          // background while the next bucket is gathered.
          bool last = gi + 1 == groups[r].size();
          prev = last ? d : written;
        }
        x.g.dep(prev, syncJoin);
      }
      if (flush) pendingBuckets = 0;
      prevAg = ag;
      prevSync = syncJoin;
    }
    TaskId end = x.g.addJoin();
    x.g.dep(prevAg, end);
    x.g.dep(prevSync, end);
    return end;
  });
  x.g.dep(done, allDone);
  finish(x, allDone, kEndRounds + 1);  // the version bump
}

}  // namespace

Result<GraphInfo> buildStrategyGraph(const Scenario& sc, const std::string& strategy,
                                     const ModelShares& shares, const Topology& topo,
                                     WorkGraph& g) {
  Ctx x{sc, shares, topo, g};
  x.channels = sc.strategy.channels > 0 ? sc.strategy.channels : sc.cluster.nicsPerNode;
  // Merging buckets would hand a polled engine lock over once per merged
  // bucket, with its gathers between handoffs k times as long: the
  // broadcast keeps every bucket when the stages poll.
  bool exact = strategy == "broadcast" && sc.calib.lockPollSeconds > 0;
  x.maxBuckets = exact ? std::numeric_limits<int>::max() : sc.strategy.maxSimBuckets;
  x.inferBase = sc.inferBase();
  GraphInfo info;
  for (int s = 0; s < sc.train.pp; ++s) {
    int real = 0;
    for (const auto& phase : shares.phases) {
      if (phase[s].train <= 0) continue;
      int r = realBuckets(phase[s]);
      real += r;
      info.mergeFactor = std::max(info.mergeFactor, mergeFactor(x, r));
    }
    info.bucketsPerStage = std::max(info.bucketsPerStage, real);
  }
  TaskId start =
      g.addDelay(sc.calib.engineCallSeconds * kStartRounds, x.inferBase, g.stageId(kStageRounds));
  if (strategy == "broadcast") {
    buildBroadcast(x, start);
  } else if (strategy == "p2p") {
    buildP2p(x, start, info);
  } else {
    return TIDE_ERROR(Code::kInvalidArgument, "unknown strategy '" + strategy + "'");
  }
  return info;
}

}  // namespace tide::sim
