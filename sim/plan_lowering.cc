#include "sim/plan_lowering.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "engine/plan/fp8_pass.h"
#include "sim/step_lowering.h"
#include "sim/topology.h"
#include "sim/work_graph.h"

namespace tide::sim {

namespace {

using Key =
    std::tuple<uint32_t, uint32_t, uint32_t, uint32_t, uint8_t>;  // stage bucket src dst kind

struct Group {
  double bytes = 0;
  bool dtypeChange = false;
};

}  // namespace

Result<StrategyResult> simulatePlan(const plan::TransferPlan& p,
                                    const workloads::ClusterSpec& cluster, const Calibration& costs,
                                    const LoweringOptions& o) {
  const double chunkBytes = o.chunkBytes, hostTcpBps = o.hostTcpBps;
  if (o.maxBucketGroups < 0)
    return TIDE_ERROR(Code::kInvalidArgument, "bucket groups must be >= 0");
  // The plan is valid (a strategy's or TransferPlan::fromJson's); checking
  // its moves again would cost as much as lowering them (Kimi-K2 at 4,096
  // GPUs: 7 M moves). Its steps' locks and lanes are the lowering's concern.
  TIDE_RETURN_IF_ERROR(p.work.validate(p.ranks.size()));
  const bool emulated = cluster.name.rfind("emulated:", 0) == 0;
  if (hostTcpBps < 0) return TIDE_ERROR(Code::kInvalidArgument, "host tcp rate must be >= 0");
  if (p.ranks.empty()) return TIDE_ERROR(Code::kInvalidArgument, "plan has no ranks");
  int gpn = std::max(1, cluster.gpusPerNode);
  uint32_t maxNode = 0;
  for (const auto& r : p.ranks) {
    if (static_cast<int>(r.gpu) >= gpn)
      return TIDE_ERROR(Code::kInvalidArgument,
                        "plan rank " + std::to_string(r.id) + " uses gpu " + std::to_string(r.gpu) +
                            " but the cluster has " + std::to_string(gpn) + " per node");
    maxNode = std::max(maxNode, r.node);
  }
  FlowSolver solver;
  Topology topo(cluster, static_cast<int>(maxNode) + 1, solver);
  // The emulated nodes share one host: its loopback carries every node's
  // intra-node tcp.
  const LinkId hostTcp =
      emulated && hostTcpBps > 0 ? solver.addLink(hostTcpBps, "host.tcp") : kNoLink;
  auto sameNode = [&](int a, int b) { return topo.nodeOf(a) == topo.nodeOf(b); };
  auto gpuOf = [&](uint32_t rank) {
    const auto& r = p.ranks[rank];
    return static_cast<int>(r.node) * gpn + static_cast<int>(r.gpu);
  };

  // Buckets in contiguous groups of at most o.maxBucketGroups per plan: a
  // group's moves between two ranks are one flow, its dependencies the
  // group's (conversions pipeline with writes group by group).
  uint32_t maxBucket = 0;
  for (const auto& m : p.moves) maxBucket = std::max(maxBucket, m.bucket);
  const uint64_t buckets = static_cast<uint64_t>(maxBucket) + 1;
  uint64_t kept = o.maxBucketGroups > 0
                      ? std::min<uint64_t>(buckets, static_cast<uint64_t>(o.maxBucketGroups))
                      : buckets;
  auto groupOf = [&](uint32_t b) { return static_cast<uint32_t>(b * kept / buckets); };
  // Fewer groups while the flows would exceed the budget: a flow-level solve
  // re-solves every flow sharing a link at each completion. When even one
  // group is over it, one group it is, without counting the ones between.
  auto flowsAt = [&](uint64_t groups) {
    const uint64_t saved = kept;
    kept = groups;
    std::vector<Key> keys;
    keys.reserve(p.moves.size());
    for (const auto& m : p.moves)
      if (m.kind != plan::MoveKind::kBroadcastHop)
        keys.push_back(Key{m.stage, groupOf(m.bucket), m.src, m.dst, static_cast<uint8_t>(m.kind)});
    kept = saved;
    std::sort(keys.begin(), keys.end());
    return static_cast<size_t>(std::unique(keys.begin(), keys.end()) - keys.begin());
  };
  if (o.maxFlows > 0 && kept > 1 && flowsAt(kept) > o.maxFlows) {
    if (flowsAt(1) > o.maxFlows) {
      kept = 1;
    } else {
      do kept /= 2;
      while (kept > 1 && flowsAt(kept) > o.maxFlows);
    }
  }
  // Group moves; broadcast hops per (stage, bucket) form one chain.
  std::map<Key, Group> groups;
  std::map<std::pair<uint32_t, uint32_t>, std::vector<const plan::Move*>> chains;
  for (const auto& m : p.moves) {
    if (m.kind == plan::MoveKind::kBroadcastHop) {
      chains[{m.stage, m.bucket}].push_back(&m);
      continue;
    }
    Group& g = groups[Key{m.stage, groupOf(m.bucket), m.src, m.dst, static_cast<uint8_t>(m.kind)}];
    g.bytes += static_cast<double>(m.bytes);
    g.dtypeChange = g.dtypeChange || m.srcDtype != m.dstDtype;
  }

  WorkGraph g;
  size_t nStages = p.stages.size();
  // Per stage and bucket: a start join (deps in) and an end join (deps out).
  std::vector<std::map<uint32_t, std::pair<TaskId, TaskId>>> sb(nStages);
  std::vector<TaskId> stageEnd(nStages);
  for (size_t s = 0; s < nStages; ++s) {
    g.stageId(p.stages[s].name);
    stageEnd[s] = g.addJoin();
  }
  auto bucketJoins = [&](uint32_t stage, uint32_t bucket) -> std::pair<TaskId, TaskId> {
    auto it = sb[stage].find(bucket);
    if (it != sb[stage].end()) return it->second;
    TaskId in = g.addJoin(), out = g.addJoin();
    g.dep(in, out);
    g.dep(out, stageEnd[stage]);
    sb[stage][bucket] = {in, out};
    return {in, out};
  };
  for (const auto& [k, grp] : groups) {
    auto [stage, bucket, src, dst, kind] = k;
    if (stage >= nStages) return TIDE_ERROR(Code::kInvalidArgument, "move names a missing stage");
    int a = gpuOf(src), b = gpuOf(dst);
    std::vector<LinkId> path;
    TaskPath tp = TaskPath::kRdma;
    double lat = 0;
    double moved = grp.bytes;
    if (a == b && grp.dtypeChange) {
      // Local conversion that changes the dtype: a quantization pass over the
      // GPU's memory (the plan's bytes are the FP8 output, scales included,
      // so its BF16 input is about twice that).
      path = onlyLink(topo.gpu(a).hbm);
      tp = TaskPath::kCompute;
      moved = plan::fp8PassBytes(2 * grp.bytes, 0);
    } else if (a == b && src != dst) {
      // Two ranks of one GPU (colocated): the importer maps the exporter's
      // buffer by CUDA IPC and copies from it on the device, reading and
      // writing each byte through the GPU's memory. The one-time exchange
      // and opening of the IPC handles is not modelled.
      path = onlyLink(topo.gpu(a).hbm);
      tp = TaskPath::kCompute;
      moved = 2 * grp.bytes;
    } else if (a == b) {
      path = onlyLink(topo.hostMem(topo.nodeOf(a)));  // a host memory copy
      tp = TaskPath::kHostMem;
    } else {
      path = topo.path(a, b);
      if (hostTcp != kNoLink && sameNode(a, b)) path.push_back(hostTcp);
      lat = topo.latency(a, b);
      tp = topo.nodeOf(a) == topo.nodeOf(b) ? TaskPath::kNvlink : TaskPath::kRdma;
    }
    auto [in, out] = bucketJoins(stage, bucket);
    TaskId t = g.addFlow(g.addPath(std::move(path)), moved, lat, gpuOf(src), gpuOf(dst),
                         static_cast<uint16_t>(stage), tp);
    g.tasks()[t].src = static_cast<int32_t>(src);
    g.tasks()[t].dst = static_cast<int32_t>(dst);
    g.dep(in, t);
    g.dep(t, out);
  }
  // Chains of different stages run at once and share links (an inference
  // node's link carries every stage's chain), so a chunk crosses a hop at the
  // chain's share of it: a hop's store-and-forward fill is one chunk at its
  // capacity over the number of stages whose chains cross its busiest link.
  struct Hop {
    std::vector<LinkId> links;
    double cap = 0, lat = 0;
  };
  std::map<std::pair<uint32_t, uint32_t>, std::vector<Hop>> chainHops;
  std::map<LinkId, std::set<uint32_t>> stagesOnLink;
  for (const auto& [k, hops] : chains) {
    auto& hv = chainHops[k];
    for (const plan::Move* m : hops) {
      int a = gpuOf(m->src), b = gpuOf(m->dst);
      Hop h;
      topo.appendPath(a, b, h.links);
      h.cap = topo.hopCapacity(a, b);
      h.lat = topo.latency(a, b);
      if (a == b) {  // a hop between two ranks of one GPU: a device copy
        h.links = onlyLink(topo.gpu(a).hbm);
        h.cap = h.links.empty() ? 0 : solver.capacity(h.links.front()) / 2;
      }
      if (hostTcp != kNoLink && sameNode(a, b)) {
        h.links.push_back(hostTcp);  // the solver charges a re-crossed link once
        h.cap = hostTcpBps;
      }
      for (LinkId l : h.links) stagesOnLink[l].insert(k.first);
      hv.push_back(std::move(h));
    }
  }
  for (const auto& [k, hops] : chains) {
    auto [stage, bucket] = k;
    const uint32_t group = groupOf(bucket);
    const auto& hv = chainHops[k];
    std::vector<LinkId> links;
    double lat = 0, bytes = 0;
    for (size_t i = 0; i < hops.size(); ++i) {
      const Hop& h = hv[i];
      links.insert(links.end(), h.links.begin(), h.links.end());
      lat += h.lat;
      size_t sharing = 1;
      for (LinkId l : h.links) sharing = std::max(sharing, stagesOnLink[l].size());
      // Store and forward: every hop after the first waits for one chunk.
      if (i > 0 && chunkBytes > 0 && h.cap > 0)
        lat += chunkBytes * static_cast<double>(sharing) / h.cap;
      bytes = std::max(bytes, static_cast<double>(hops[i]->bytes));
    }
    auto [in, out] = bucketJoins(stage, group);
    TaskId t = g.addFlow(
        g.addPath(std::move(links)), bytes, lat, static_cast<int32_t>(hops.front()->src),
        static_cast<int32_t>(hops.back()->dst), static_cast<uint16_t>(stage), TaskPath::kNccl);
    g.dep(in, t);
    g.dep(t, out);
  }
  // Stage dependencies.
  for (size_t s = 0; s < nStages; ++s) {
    for (const auto& d : p.stages[s].deps) {
      if (d.stage >= nStages)
        return TIDE_ERROR(Code::kInvalidArgument, "dependency on a missing stage");
      if (d.perBucket) {
        for (auto& [bucket, joins] : sb[s]) {
          auto [din, dout] = bucketJoins(d.stage, bucket);
          (void)din;
          g.dep(dout, joins.first);
        }
      } else {
        for (auto& [bucket, joins] : sb[s]) g.dep(stageEnd[d.stage], joins.first);
      }
    }
  }
  // The update's non-wire work, beside its stages of moves.
  TIDE_ASSIGN_OR_RETURN(LoweredSteps ls, lowerSteps(p.work, p.ranks.size(), gpuOf, topo, costs, g));
  // A first update pins its buffers before any move uses them.
  if (!ls.registerEnds.empty()) {
    const TaskId pinned = g.addJoin();
    for (TaskId t : ls.registerEnds) g.dep(t, pinned);
    for (const auto& stageBuckets : sb)
      for (const auto& [bucket, joins] : stageBuckets) g.dep(pinned, joins.first);
  }
  StrategyResult r;
  r.scenario = "plan";
  r.strategy = p.strategy;
  linkLowerBound(g, solver, &r.lowerBoundSeconds, &r.bottleneck);
  TIDE_ASSIGN_OR_RETURN(ExecResult ex, execute(g, solver, {}, o.progress));
  takeExecution(r, std::move(ex), g);
  auto sum = p.summarize();
  r.wireBytes = static_cast<double>(sum.totalBytes) + p.work.wireBytes;
  for (size_t i = 0; i < sum.receivedBytes.size(); ++i) {
    if (p.ranks[i].role == plan::Role::kInference)
      r.bytesPerInferRank = std::max(
          r.bytesPerInferRank, static_cast<double>(sum.receivedBytes[i]) + ls.receivedBytes[i]);
  }
  r.bucketsPerStage =
      p.moves.empty() ? static_cast<int>(p.work.bucketsPerStage) : static_cast<int>(maxBucket) + 1;
  r.mergeFactor = p.moves.empty() ? p.work.mergeFactor
                                  : static_cast<double>(buckets) / static_cast<double>(kept);
  r.registrationSeconds = ls.registrationSeconds;
  return r;
}

}  // namespace tide::sim
