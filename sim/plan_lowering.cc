#include "sim/plan_lowering.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "engine/plan/fp8_pass.h"
#include "engine/plan/schedule.h"
#include "sim/step_lowering.h"
#include "sim/topology.h"
#include "sim/work_graph.h"

namespace tide::sim {

namespace {

using plan::Schedule;
using plan::Unit;
using plan::UnitKind;

// Where a unit's bytes travel in the modelled cluster.
struct Route {
  std::vector<LinkId> links;
  TaskPath kind = TaskPath::kRdma;
  double latency = 0;
  double byteFactor = 1;  // bytes moved per byte delivered
  double capacity = 0;    // a hop's: what one chunk crosses it at
};

class Lowering {
 public:
  Lowering(const plan::TransferPlan& p, const Schedule& s, const workloads::ClusterSpec& cluster,
           const LoweringOptions& o, FlowSolver& solver, Topology& topo, WorkGraph& g)
      : p_(p), s_(s), o_(o), solver_(solver), topo_(topo), g_(g) {
    gpn_ = std::max(1, cluster.gpusPerNode);
    const bool emulated = cluster.kind == workloads::ClusterKind::kEmulated;
    if (emulated && o.hostTcpBps > 0) hostTcp_ = solver.addLink(o.hostTcpBps, "host.tcp");
    if (emulated && o.hostConvertBps > 0) {
      hostCpu_ = solver.addLink(o.hostConvertBps * std::max(1, o.hostCores), "host.cpu");
    }
  }

  int gpuOf(uint32_t rank) const {
    const auto& r = p_.ranks[rank];
    return static_cast<int>(r.node) * gpn_ + static_cast<int>(r.gpu);
  }

  // Buckets in contiguous groups of at most o.maxBucketGroups: a group's
  // units of one (stage, rank, peer) are priced as one flow, its gates as
  // one join. Fewer groups while the flows would exceed o.maxFlows (a
  // flow-level solve re-solves every flow sharing a link at each
  // completion); when even one group is over it, one group it is.
  void chooseGroups() {
    uint32_t maxBucket = 0;
    for (const Unit& u : s_.units) maxBucket = std::max(maxBucket, u.bucket);
    buckets_ = static_cast<uint64_t>(maxBucket) + 1;
    kept_ = o_.maxBucketGroups > 0
                ? std::min<uint64_t>(buckets_, static_cast<uint64_t>(o_.maxBucketGroups))
                : buckets_;
    if (o_.maxFlows > 0 && kept_ > 1 && flowsAt(kept_) > o_.maxFlows) {
      if (flowsAt(1) > o_.maxFlows) {
        kept_ = 1;
      } else {
        do kept_ /= 2;
        while (kept_ > 1 && flowsAt(kept_) > o_.maxFlows);
      }
    }
    merged_ = kept_ < buckets_;
    uint64_t hopPieces = 0;
    for (const Unit& u : s_.units)
      if (u.kind == UnitKind::kHop) hopPieces += u.pieces;
    piecewise_ = !merged_ && hopPieces <= o_.maxHopPieces;
  }

  Status lower() {
    for (const auto& st : p_.stages) g_.stageId(st.name);
    gateJoins();
    unitTask_.assign(s_.units.size(), kNoTask);
    TIDE_RETURN_IF_ERROR(writesAndLocals());
    hops();
    // What each unit waits for and what it counts to.
    for (uint32_t id = 0; id < s_.units.size(); ++id) {
      const Unit& u = s_.units[id];
      if (u.kind == UnitKind::kHop && piecewise_) continue;  // per piece, in hops()
      const TaskId t = unitTask_[id];
      for (auto* d = s_.depsBegin(u); d != s_.depsEnd(u); ++d) {
        if (d->kind == plan::DepKind::kGate) edge(gateJoin_[d->id], t);
      }
      for (uint32_t gate : u.gates)
        if (gate != plan::kNoGate) edge(t, gateJoin_[gate]);
    }
    return Status::ok();
  }

  // Every unit task's first piece waits for the first update's registration.
  void after(TaskId pinned) {
    for (TaskId t : firstTasks_) edge(pinned, t);
  }

  uint64_t buckets() const { return buckets_; }
  uint64_t kept() const { return kept_; }

 private:
  static constexpr TaskId kNoTask = 0xffffffffu;

  uint32_t groupOf(uint32_t bucket) const {
    return static_cast<uint32_t>(bucket * kept_ / buckets_);
  }

  size_t flowsAt(uint64_t groups) const {
    std::set<std::tuple<uint32_t, uint32_t, uint32_t, uint32_t>> keys;
    for (const Unit& u : s_.units) {
      if (u.kind == UnitKind::kHop) continue;
      keys.insert({u.stage, static_cast<uint32_t>(u.bucket * groups / buckets_), u.rank, u.peer});
    }
    return keys.size();
  }

  void edge(TaskId before, TaskId after) {
    if (before == kNoTask || after == kNoTask) return;
    if (merged_ && !edges_.insert((static_cast<uint64_t>(before) << 32) | after).second) return;
    g_.dep(before, after);
  }

  // One join per gate; merged: per (rank, stage, bucket group | all).
  void gateJoins() {
    gateJoin_.resize(s_.gates.size());
    std::map<std::tuple<uint32_t, uint32_t, uint32_t>, TaskId> byKey;
    for (size_t i = 0; i < s_.gates.size(); ++i) {
      const plan::Gate& gt = s_.gates[i];
      if (!merged_) {
        gateJoin_[i] = g_.addJoin();
        continue;
      }
      const uint32_t b = gt.bucket == plan::kAllBuckets ? plan::kAllBuckets : groupOf(gt.bucket);
      auto [it, fresh] = byKey.try_emplace({gt.rank, gt.stage, b}, 0);
      if (fresh) it->second = g_.addJoin();
      gateJoin_[i] = it->second;
    }
  }

  Route routeOf(const Unit& u) {
    Route r;
    const int a = gpuOf(u.rank), b = gpuOf(u.peer);
    if (a == b && u.converts) {
      // A local conversion that changes the dtype: a quantization pass over
      // the GPU's memory (the unit's bytes are the FP8 output, scales
      // included, so its BF16 input is about twice that); on an emulated
      // cluster, over the host's memory on one of its shared cores.
      r.links = hostCpu_ != kNoLink ? std::vector<LinkId>{rankCpu(u.rank), hostCpu_}
                                    : onlyLink(topo_.gpu(a).hbm);
      r.kind = TaskPath::kCompute;
      r.byteFactor = -1;  // fp8PassBytes of the input
    } else if (a == b && u.rank != u.peer) {
      // Two ranks of one GPU (colocated): the importer maps the exporter's
      // buffer by CUDA IPC and copies from it on the device, reading and
      // writing each byte through the GPU's memory. The one-time exchange
      // and opening of the IPC handles is not modelled.
      r.links = onlyLink(topo_.gpu(a).hbm);
      r.kind = TaskPath::kCompute;
      r.byteFactor = 2;
      r.capacity = r.links.empty() ? 0 : solver_.capacity(r.links.front()) / 2;
    } else if (a == b) {
      r.links = onlyLink(topo_.hostMem(topo_.nodeOf(a)));  // a host memory copy
      r.kind = TaskPath::kHostMem;
    } else {
      r.links = topo_.path(a, b);
      r.latency = topo_.latency(a, b);
      r.kind = topo_.nodeOf(a) == topo_.nodeOf(b) ? TaskPath::kNvlink : TaskPath::kRdma;
      r.capacity = topo_.hopCapacity(a, b);
      if (hostTcp_ != kNoLink && topo_.nodeOf(a) == topo_.nodeOf(b)) {
        r.links.push_back(hostTcp_);  // the solver charges a re-crossed link once
        r.capacity = o_.hostTcpBps;
      }
    }
    if (u.kind == UnitKind::kHop) r.kind = TaskPath::kNccl;
    return r;
  }

  // A rank's one core for its conversions (emulated clusters).
  LinkId rankCpu(uint32_t rank) {
    auto [it, fresh] = rankCpu_.try_emplace(rank, kNoLink);
    if (fresh)
      it->second = solver_.addLink(o_.hostConvertBps, "rank" + std::to_string(rank) + ".cpu");
    return it->second;
  }

  double moved(const Route& r, double bytes, uint32_t unit) const {
    if (r.byteFactor >= 0) return r.byteFactor * bytes;
    // A conversion measured on this host: its seconds on one core, in the
    // bytes its rank's core moves at hostConvertBps.
    if (hostCpu_ != kNoLink && unit < o_.convertSeconds.size())
      return o_.convertSeconds[unit] * o_.hostConvertBps;
    return plan::fp8PassBytes(2 * bytes, 0);
  }

  TaskId flow(const Route& r, double bytes, const Unit& u, uint32_t unit, uint32_t piece) {
    const TaskId t = g_.addFlow(g_.addPath(r.links), moved(r, bytes, unit), r.latency,
                                static_cast<int32_t>(u.rank), static_cast<int32_t>(u.peer),
                                static_cast<uint16_t>(u.stage), r.kind);
    g_.tasks()[t].unit = unit;
    g_.tasks()[t].piece = piece;
    return t;
  }

  // Writes and local units: one flow each, or one per merged group.
  Status writesAndLocals() {
    struct Merged {
      double bytes = 0;
      bool converts = false;
      uint32_t first = 0;
      std::vector<uint32_t> units;
    };
    std::map<std::tuple<uint32_t, uint32_t, uint32_t, uint32_t>, Merged> groups;
    for (uint32_t id = 0; id < s_.units.size(); ++id) {
      const Unit& u = s_.units[id];
      if (u.kind == UnitKind::kHop) continue;
      if (u.stage >= p_.stages.size())
        return TIDE_ERROR(Code::kInvalidArgument, "unit names a missing stage");
      if (!merged_) {
        unitTask_[id] = flow(routeOf(u), static_cast<double>(u.bytes), u, id, 0);
        firstTasks_.push_back(unitTask_[id]);
        continue;
      }
      Merged& m = groups[{u.stage, groupOf(u.bucket), u.rank, u.peer}];
      if (m.units.empty()) m.first = id;
      m.bytes += static_cast<double>(u.bytes);
      m.converts = m.converts || u.converts;
      m.units.push_back(id);
    }
    for (auto& [key, m] : groups) {
      Unit u = s_.units[m.first];
      u.converts = m.converts;
      const TaskId t = flow(routeOf(u), m.bytes, u, kNoUnit, 0);
      firstTasks_.push_back(t);
      for (uint32_t id : m.units) unitTask_[id] = t;
    }
    return Status::ok();
  }

  // The hop units of each chain, head first, from the schedule's same-piece
  // dependencies (a hop's piece waits for the hop into its sender).
  std::vector<std::vector<uint32_t>> chains() const {
    std::vector<uint32_t> next(s_.units.size(), kNoUnit);
    std::vector<char> fed(s_.units.size(), 0);
    for (uint32_t id = 0; id < s_.units.size(); ++id) {
      const Unit& u = s_.units[id];
      if (u.kind != UnitKind::kHop) continue;
      for (auto* d = s_.depsBegin(u); d != s_.depsEnd(u); ++d) {
        if (d->kind != plan::DepKind::kSamePiece) continue;
        next[d->id] = id;
        fed[id] = 1;
      }
    }
    std::vector<std::vector<uint32_t>> out;
    for (uint32_t id = 0; id < s_.units.size(); ++id) {
      if (s_.units[id].kind != UnitKind::kHop || fed[id]) continue;
      out.emplace_back();
      for (uint32_t h = id; h != kNoUnit; h = next[h]) out.back().push_back(h);
    }
    return out;
  }

  // Piecewise: each piece of each hop is a flow after the piece before it
  // (a sender's writes to one peer land in order) and the same piece of the
  // hop into its sender (store and forward). Otherwise a chain is one flow
  // over all its hops, which pays a chunk's store-and-forward time per hop
  // after the first (the pipeline fill), at the chain's share of the hop
  // when other stages' chains cross the same link.
  void hops() {
    const auto all = chains();
    if (piecewise_) {
      std::vector<std::vector<TaskId>> pieceTask(s_.units.size());
      for (const auto& chain : all) {
        for (uint32_t id : chain) {
          const Unit& u = s_.units[id];
          const Route r = routeOf(u);
          auto& tasks = pieceTask[id];
          for (uint32_t k = 0; k < u.pieces; ++k) {
            tasks.push_back(flow(r, static_cast<double>(u.bytesOfPiece(k)), u, id, k));
            if (k > 0) g_.dep(tasks[k - 1], tasks[k]);
          }
          firstTasks_.push_back(tasks.front());
          for (auto* d = s_.depsBegin(u); d != s_.depsEnd(u); ++d) {
            if (d->kind == plan::DepKind::kGate) {
              g_.dep(gateJoin_[d->id], tasks.front());
            } else {
              const auto& prev = pieceTask[d->id];
              for (uint32_t k = 0; k < u.pieces && k < prev.size(); ++k) g_.dep(prev[k], tasks[k]);
            }
          }
          for (uint32_t gate : u.gates)
            if (gate != plan::kNoGate)
              for (TaskId t : tasks) g_.dep(t, gateJoin_[gate]);
          unitTask_[id] = tasks.back();
        }
      }
      return;
    }
    std::vector<std::vector<Route>> routes(all.size());
    std::map<LinkId, std::set<uint32_t>> stagesOnLink;
    for (size_t c = 0; c < all.size(); ++c) {
      for (uint32_t id : all[c]) {
        routes[c].push_back(routeOf(s_.units[id]));
        for (LinkId l : routes[c].back().links) stagesOnLink[l].insert(s_.units[id].stage);
      }
    }
    for (size_t c = 0; c < all.size(); ++c) {
      std::vector<LinkId> links;
      double lat = 0, bytes = 0;
      for (size_t i = 0; i < all[c].size(); ++i) {
        const Unit& u = s_.units[all[c][i]];
        const Route& h = routes[c][i];
        links.insert(links.end(), h.links.begin(), h.links.end());
        lat += h.latency;
        size_t sharing = 1;
        for (LinkId l : h.links) sharing = std::max(sharing, stagesOnLink[l].size());
        if (i > 0 && h.capacity > 0)
          lat += static_cast<double>(u.pieceBytes) * static_cast<double>(sharing) / h.capacity;
        bytes = std::max(bytes, static_cast<double>(u.bytes));
      }
      const Unit& head = s_.units[all[c].front()];
      const TaskId t =
          g_.addFlow(g_.addPath(std::move(links)), bytes, lat, static_cast<int32_t>(head.rank),
                     static_cast<int32_t>(s_.units[all[c].back()].peer),
                     static_cast<uint16_t>(head.stage), TaskPath::kNccl);
      firstTasks_.push_back(t);
      for (uint32_t id : all[c]) unitTask_[id] = t;
    }
  }

  const plan::TransferPlan& p_;
  const Schedule& s_;
  const LoweringOptions& o_;
  FlowSolver& solver_;
  Topology& topo_;
  WorkGraph& g_;
  int gpn_ = 1;
  LinkId hostTcp_ = kNoLink, hostCpu_ = kNoLink;
  std::unordered_map<uint32_t, LinkId> rankCpu_;
  uint64_t buckets_ = 1, kept_ = 1;
  bool merged_ = false, piecewise_ = false;
  std::vector<TaskId> gateJoin_, unitTask_, firstTasks_;
  std::unordered_set<uint64_t> edges_;
};

}  // namespace

Result<StrategyResult> simulatePlan(const plan::TransferPlan& p,
                                    const workloads::ClusterSpec& cluster, const Calibration& costs,
                                    const LoweringOptions& o) {
  if (o.maxBucketGroups < 0)
    return TIDE_ERROR(Code::kInvalidArgument, "bucket groups must be >= 0");
  // The plan is valid (a strategy's or TransferPlan::fromJson's); checking
  // its moves again would cost as much as lowering them (Kimi-K2 at 4,096
  // GPUs: 7 M moves). Its steps' locks and lanes are the lowering's concern.
  TIDE_RETURN_IF_ERROR(p.work.validate(p.ranks.size()));
  if (o.hostTcpBps < 0) return TIDE_ERROR(Code::kInvalidArgument, "host tcp rate must be >= 0");
  if (p.ranks.empty()) return TIDE_ERROR(Code::kInvalidArgument, "plan has no ranks");
  const int gpn = std::max(1, cluster.gpusPerNode);
  uint32_t maxNode = 0;
  for (const auto& r : p.ranks) {
    if (static_cast<int>(r.gpu) >= gpn)
      return TIDE_ERROR(Code::kInvalidArgument,
                        "plan rank " + std::to_string(r.id) + " uses gpu " + std::to_string(r.gpu) +
                            " but the cluster has " + std::to_string(gpn) + " per node");
    maxNode = std::max(maxNode, r.node);
  }
  TIDE_ASSIGN_OR_RETURN(const Schedule sched, Schedule::build(p));
  FlowSolver solver;
  Topology topo(cluster, static_cast<int>(maxNode) + 1, solver);
  WorkGraph g;
  Lowering lw(p, sched, cluster, o, solver, topo, g);
  lw.chooseGroups();
  TIDE_RETURN_IF_ERROR(lw.lower());
  // The update's non-wire work, beside its units.
  auto gpuOf = [&](uint32_t rank) { return lw.gpuOf(rank); };
  TIDE_ASSIGN_OR_RETURN(LoweredSteps ls, lowerSteps(p.work, p.ranks.size(), gpuOf, topo, costs, g));
  // A first update pins its buffers before any unit uses them.
  if (!ls.registerEnds.empty()) {
    const TaskId pinned = g.addJoin();
    for (TaskId t : ls.registerEnds) g.dep(t, pinned);
    lw.after(pinned);
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
      p.moves.empty() ? static_cast<int>(p.work.bucketsPerStage) : static_cast<int>(lw.buckets());
  r.mergeFactor = p.moves.empty()
                      ? p.work.mergeFactor
                      : static_cast<double>(lw.buckets()) / static_cast<double>(lw.kept());
  r.registrationSeconds = ls.registrationSeconds;
  return r;
}

}  // namespace tide::sim
