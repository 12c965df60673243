#include "sim/strategy_graphs.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace tide::sim {

namespace {

struct Ctx {
  const Scenario& sc;
  const ModelShares& shares;
  const Topology& topo;
  WorkGraph& g;
  int channels = 1;
  int inferBase = 0;  // GPU id of inference rank 0
  double k = 1;       // merge factor
};

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

// Real buckets of a stage; more than maxSimBuckets are merged into one
// simulated bucket each, the per-bucket fixed costs scaled by the factor.
int stageBuckets(Ctx& x, const StageBytes& sb) {
  double bb = static_cast<double>(x.sc.strategy.bucketBytes);
  int real = std::max(1, static_cast<int>(std::ceil(sb.train / bb)));
  int nb = std::min(real, x.sc.strategy.maxSimBuckets);
  x.k = static_cast<double>(real) / nb;
  return nb;
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

// Pause before, post-processing and resume after; returns the final task.
TaskId finish(Ctx& x, TaskId allDone) {
  const auto& il = x.sc.infer;
  uint16_t post = x.g.stageId("postprocess");
  uint16_t resume = x.g.stageId("pause_resume");
  TaskId postJoin = x.g.addJoin();
  double postSec = x.shares.sharePerRank / x.sc.calib.postprocessBps;
  for (int i = 0; i < il.worldSize(); ++i) {
    TaskId p = x.g.addDelay(postSec, x.inferBase + i, post);
    x.g.dep(allDone, p);
    x.g.dep(p, postJoin);
  }
  TaskId r = x.g.addDelay(x.sc.calib.engineCallSeconds, x.inferBase, resume);
  x.g.dep(postJoin, r);
  return r;
}

void buildBroadcast(Ctx& x, TaskId start) {
  const auto& tl = x.sc.train;
  uint16_t sGather = x.g.stageId("allgather");
  uint16_t sQuant = x.g.stageId("quantize");
  uint16_t sCall = x.g.stageId("engine_call");
  uint16_t sBcast = x.g.stageId("broadcast");
  uint16_t sIngest = x.g.stageId("engine_ingest");
  int32_t lock = x.g.addLock();
  std::vector<int> receivers;
  for (int i = 0; i < x.sc.infer.worldSize(); ++i) receivers.push_back(x.inferBase + i);
  TaskId allDone = x.g.addJoin();
  for (int s = 0; s < tl.pp; ++s) {
    const StageBytes& sb = x.shares.stages[s];
    int nb = stageBuckets(x, sb);
    int head = s * tl.tp * tl.cp * tl.dp;
    auto ep = epGroup(tl, s), tp = tpGroup(tl, s);
    double bucket = sb.train / nb;
    double fe = sb.train > 0 ? sb.trainExpert / sb.train : 0;
    double wireRatio = sb.train > 0 ? sb.wire / sb.train : 0;
    TaskId prev = start;
    for (int b = 0; b < nb; ++b) {
      TaskId a1 = ringAllGather(x, ep, bucket * fe, prev, sGather);
      TaskId a2 = ringAllGather(x, tp, bucket * (1 - fe), prev, sGather);
      TaskId q = x.g.addFlow(x.g.addPath(onlyLink(x.topo.gpu(head).quant)), bucket, 0, head, head,
                             sQuant, TaskPath::kCompute);
      x.g.dep(a1, q);
      x.g.dep(a2, q);
      TaskId call = x.g.addDelay(x.sc.calib.engineCallSeconds * x.k, head, sCall);
      x.g.tasks()[call].acquire = lock;
      x.g.dep(q, call);
      double wire = bucket * wireRatio;
      TaskId bc = chainBroadcast(x, head, receivers, wire, call, sBcast);
      TaskId rel = x.g.addJoin();
      x.g.tasks()[rel].release = lock;
      for (int e = 0; e < x.sc.infer.engines; ++e) {
        TaskId in = x.g.addDelay(wire / x.sc.calib.engineIngestBps, x.inferBase + e * x.sc.infer.tp,
                                 sIngest);
        x.g.dep(bc, in);
        x.g.dep(in, rel);
      }
      prev = rel;
    }
    x.g.dep(prev, allDone);
  }
  finish(x, allDone);
}

void buildP2p(Ctx& x, TaskId start, GraphInfo& info) {
  const auto& tl = x.sc.train;
  const auto& il = x.sc.infer;
  uint16_t sGather = x.g.stageId("allgather");
  uint16_t sQuant = x.g.stageId("quantize");
  uint16_t sD2h = x.g.stageId("d2h");
  uint16_t sLoad = x.g.stageId("replica_load");
  uint16_t sWrite = x.g.stageId("rdma_write");
  uint16_t sReg = x.g.stageId("register");
  int per = tl.tp * tl.cp * tl.dp;
  int G = il.tp;
  TaskId allDone = x.g.addJoin();
  for (int s = 0; s < tl.pp; ++s) {
    const StageBytes& sb = x.shares.stages[s];
    int nb = stageBuckets(x, sb);
    auto ep = epGroup(tl, s), tp = tpGroup(tl, s);
    double bucket = sb.train / nb;
    double fe = sb.train > 0 ? sb.trainExpert / sb.train : 0;
    double wireRatio = sb.train > 0 ? sb.wire / sb.train : 0;
    double shareFrac = sb.wire > 0 ? sb.share / sb.wire : 0;
    // Round-robin: pair (engine e, engine rank j) -> trainer (e*G + j) mod m.
    std::vector<std::vector<int>> targets(per);
    std::vector<std::set<int>> replicas(per);
    for (int e = 0; e < il.engines; ++e) {
      for (int j = 0; j < G; ++j) {
        int t = (e * G + j) % per;
        targets[t].push_back(x.inferBase + e * G + j);
        replicas[t].insert(j);
      }
    }
    std::vector<TaskId> regs(per, start);
    if (x.sc.strategy.firstUpdate) {
      for (int r = 0; r < per; ++r) {
        double bytes = replicas[r].size() * sb.share;
        double pages = std::ceil(bytes / static_cast<double>(x.sc.strategy.pageBytes));
        double sec = pages * x.sc.calib.registerPerPageSeconds;
        info.registrationSeconds = std::max(info.registrationSeconds, sec);
        regs[r] = x.g.addDelay(sec, s * per + r, sReg);
        x.g.dep(start, regs[r]);
      }
    }
    TaskId prevAg = start, prevQ = start, prevDone = start;
    for (int b = 0; b < nb; ++b) {
      TaskId agIn = x.g.addJoin();
      x.g.dep(prevAg, agIn);
      x.g.dep(prevQ, agIn);
      // Without pipelining (the RL framework's p2p path) bucket b+1 starts
      // once every write of bucket b is done.
      if (!x.sc.strategy.pipelined) x.g.dep(prevDone, agIn);
      TaskId a1 = ringAllGather(x, ep, bucket * fe, agIn, sGather);
      TaskId a2 = ringAllGather(x, tp, bucket * (1 - fe), agIn, sGather);
      TaskId ag = x.g.addJoin();
      x.g.dep(a1, ag);
      x.g.dep(a2, ag);
      TaskId qJoin = x.g.addJoin();
      TaskId doneJoin = x.g.addJoin();
      double wire = bucket * wireRatio;
      for (int r = 0; r < per; ++r) {
        if (targets[r].empty()) continue;
        int gpu = s * per + r;
        double repFrac = replicas[r].size() * shareFrac;
        // Conversion (HF names + quantization) runs on the whole gathered
        // bucket; loading then keeps the replica's slices.
        TaskId q = x.g.addFlow(x.g.addPath(onlyLink(x.topo.gpu(gpu).quant)),
                               x.sc.strategy.pipelined ? bucket * repFrac : bucket, 0, gpu, gpu,
                               sQuant, TaskPath::kCompute);
        x.g.dep(ag, q);
        x.g.dep(q, qJoin);
        TaskId d = x.g.addFlow(x.g.addPath(onlyLink(x.topo.gpu(gpu).d2h)), wire * repFrac, 0, gpu,
                               gpu, sD2h, TaskPath::kPcieD2H);
        x.g.dep(q, d);
        std::vector<LinkId> loadPath = onlyLink(x.topo.gpu(gpu).load);
        for (LinkId l : onlyLink(x.topo.hostMem(x.topo.nodeOf(gpu)))) loadPath.push_back(l);
        TaskId ld = x.g.addFlow(x.g.addPath(std::move(loadPath)), wire * repFrac, 0, gpu, gpu,
                                sLoad, TaskPath::kHostMem);
        x.g.dep(d, ld);
        x.g.dep(regs[r], ld);
        for (int t : targets[r]) {
          TaskId w = x.g.addFlow(x.g.addPath(x.topo.path(gpu, t)), wire * shareFrac,
                                 x.topo.latency(gpu, t), gpu, t, sWrite, TaskPath::kRdma);
          x.g.dep(ld, w);
          x.g.dep(w, allDone);
          x.g.dep(w, doneJoin);
        }
      }
      prevAg = ag;
      prevQ = qJoin;
      prevDone = doneJoin;
    }
  }
  finish(x, allDone);
}

}  // namespace

Result<GraphInfo> buildStrategyGraph(const Scenario& sc, const std::string& strategy,
                                     const ModelShares& shares, const Topology& topo,
                                     WorkGraph& g) {
  Ctx x{sc, shares, topo, g};
  x.channels = sc.strategy.channels > 0 ? sc.strategy.channels : sc.cluster.nicsPerNode;
  x.inferBase = sc.trainNodes * sc.cluster.gpusPerNode;
  GraphInfo info;
  double bb = static_cast<double>(sc.strategy.bucketBytes);
  for (const auto& s : shares.stages) {
    int real = std::max(1, static_cast<int>(std::ceil(s.train / bb)));
    info.bucketsPerStage = std::max(info.bucketsPerStage, real);
    info.mergeFactor = std::max(
        info.mergeFactor, static_cast<double>(real) / std::min(real, sc.strategy.maxSimBuckets));
  }
  TaskId start = g.addDelay(sc.calib.engineCallSeconds, x.inferBase, g.stageId("pause_resume"));
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
