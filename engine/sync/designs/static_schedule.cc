// static-schedule (design_strategies.h): the design of "Weight Transfer for
// RL Post-Training in under 2 seconds" (docs/designs.md, docs/sources.md).

#include <algorithm>
#include <deque>
#include <map>

#include "engine/sync/designs/design_steps.h"
#include "engine/sync/designs/design_strategies.h"
#include "workloads/layout.h"

namespace tide::sync::designs {

namespace {

// The controller's signal that starts the transfers, and the training
// ranks' report that ends them.
constexpr double kStaticScheduleOpenRounds = 1;
constexpr double kStaticScheduleCloseRounds = 1;
// The global barrier between mesh groups: one Gloo barrier over Ethernet.
constexpr double kBarrierRounds = 1;
// Eager operations per parameter: full_tensor() on every mesh member; on
// the sender the projection fusion, the quantization and one RDMA WRITE
// post per receiver (counted per receiver below). Estimates from the
// design's description (docs/designs.md), priced by the profile's host_op.
constexpr double kGatherOps = 1;
constexpr double kPrepareOps = 2;
constexpr double kPostOps = 1;
// Simulation granularity: consecutive parameters of one mesh and layer are
// merged into one task of at most watermark / kInFlight bytes, so that at
// least this many tasks fit under the watermark at once.
constexpr double kInFlight = 4;

// A DeviceMesh: the training ranks holding one parameter, as the shard
// groups that all-gather it (one per HSDP replica). After full_tensor()
// every member holds the whole parameter and can send it.
struct Mesh {
  int group = 0;  // mesh group: 0 the non-expert parameters, 1 the routed experts
  std::vector<std::vector<uint32_t>> shardGroups;
  std::vector<uint32_t> members;  // all shard groups' ranks
};

// The shard groups of pipeline stage `s`: non-expert (`ep` < 0) or the
// routed experts of expert-parallel rank `ep`.
Mesh makeMesh(const workloads::TrainLayout& tl, int s, int ep) {
  Mesh m;
  m.group = ep < 0 ? 0 : 1;
  const int per = tl.tp * tl.cp * tl.dp;
  const int f = ep < 0 ? tl.fsdp : tl.expertFsdp();
  std::map<int, std::vector<uint32_t>> byReplica;
  for (int local = 0; local < per; ++local) {
    const uint32_t rank = static_cast<uint32_t>(s * per + local);
    workloads::TrainCoord c = workloads::trainCoord(tl, static_cast<int>(rank));
    if (ep < 0) {
      // A replica: one CP rank and one HSDP group of dp; its TP x FSDP ranks.
      byReplica[c.cp * (tl.dp / f) + c.dp / f].push_back(rank);
    } else if (c.ep == ep) {
      byReplica[c.edp / f].push_back(rank);  // its ETP x FSDP ranks
    }
  }
  for (auto& [k, v] : byReplica) {
    m.members.insert(m.members.end(), v.begin(), v.end());
    m.shardGroups.push_back(std::move(v));
  }
  return m;
}

// One task: consecutive parameters of a mesh and layer.
struct Task {
  int mesh = 0;
  double tensors = 0, train = 0;
  std::map<uint32_t, double> wireTo;   // inference plan rank -> wire bytes
  std::map<uint32_t, double> trainTo;  // the same slices in training bytes
};

}  // namespace

Result<plan::TransferPlan> StaticScheduleStrategy::makePlan(const SyncProblem& pr) const {
  miles::ModelShares shares;
  TIDE_ASSIGN_OR_RETURN(plan::TransferPlan p,
                        miles::beginPlan(pr, name(), shares, /*fsdpLayouts=*/true));
  Ctx x = miles::makeCtx(pr, shares, p, /*exact=*/true);
  auto& g = x.g;
  x.k = 1;
  const auto& tl = *pr.train;
  const auto& il = *pr.infer;
  const auto& model = *pr.model;
  const uint16_t sRounds = g.stage(plan::kStageRounds);
  const uint16_t sGather = g.stage("full_tensor");
  const uint16_t sPrep = g.stage("prepare");
  const uint16_t sWrite = g.stage("rdma_write");
  const uint16_t sBarrier = g.stage("barrier");
  const double watermark = static_cast<double>(std::max<uint64_t>(1, x.o.bucketBytes));

  // The routing table, computed once: the parameters' meshes and, per
  // parameter, what each inference rank holds of it.
  workloads::ModelInventory inv = workloads::buildInventory(model);
  const int perEpTrain = inv.experts > 0 ? std::max(1, inv.experts / tl.ep) : 1;
  const int perEpInfer = inv.experts > 0 ? std::max(1, inv.experts / il.ep) : 1;
  std::map<std::pair<int, int>, int> meshOf;  // (stage, ep or -1) -> index
  std::vector<Mesh> meshes;
  std::vector<Task> tasks;
  std::map<int, std::pair<int, int>> open;  // mesh -> (open task, its layer)
  const double cap = watermark / kInFlight;
  for (const auto& t : inv.tensors) {
    int stage = t.kind == workloads::TensorKind::kEmbedding ? 0 : tl.pp - 1;
    if (t.layer >= 0) stage = workloads::stageOfLayer(tl, model.layers, t.layer);
    const bool expert = t.kind == workloads::TensorKind::kRoutedExpert;
    const int ep = expert ? t.expert / perEpTrain : -1;
    auto [it, fresh] = meshOf.try_emplace({stage, ep}, static_cast<int>(meshes.size()));
    if (fresh) meshes.push_back(makeMesh(tl, stage, ep));
    const int mesh = it->second;
    const double train = static_cast<double>(t.trainBytes());
    const double wire = static_cast<double>(x.o.fp8Wire ? t.inferBytes() : t.trainBytes());
    auto o = open.find(mesh);
    if (o == open.end() || o->second.second != t.layer ||
        tasks[o->second.first].train + train > cap) {
      tasks.push_back(Task{mesh});
      open[mesh] = {static_cast<int>(tasks.size()) - 1, t.layer};
    }
    Task& task = tasks[open[mesh].first];
    task.tensors += 1;
    task.train += train;
    const workloads::InferSplit split = workloads::inferSplit(t, il);
    for (int i = 0; i < il.worldSize(); ++i) {
      if (expert && workloads::inferCoord(il, i).ep != t.expert / perEpInfer) continue;
      const uint32_t dst = x.inferBase + static_cast<uint32_t>(i);
      task.wireTo[dst] += wire / split.size;
      task.trainTo[dst] += train / split.size;
    }
  }

  // Per training rank: bytes routed to it so far (the balance), and its
  // tasks in flight with their temporary memory (the watermark).
  std::vector<double> load(static_cast<size_t>(tl.worldSize()), 0);
  struct InFlight {
    StepId end;
    double bytes;
  };
  std::vector<std::deque<InFlight>> flight(static_cast<size_t>(tl.worldSize()));
  std::vector<double> held(static_cast<size_t>(tl.worldSize()), 0);
  auto nodeOf = [&](uint32_t planRank) { return p.ranks[planRank].node; };

  StepId start = g.add(plan::StepKind::kControlRound, 0, kStaticScheduleOpenRounds, sRounds);
  StepId allDone = g.join();
  g.dep(start, allDone);
  StepId groupStart = start;
  std::vector<StepId> lastGather(meshes.size(), start);
  for (int group = 0; group < 2; ++group) {
    StepId gathersDone = g.join();
    g.dep(groupStart, gathersDone);
    for (const Task& task : tasks) {
      const Mesh& mesh = meshes[task.mesh];
      if (mesh.group != group) continue;
      // Senders, from the table: each receiver's slice from the least
      // loaded member, one on the receiver's node first (NVLink).
      std::map<uint32_t, std::vector<std::pair<uint32_t, double>>> bySender;
      for (const auto& [dst, bytes] : task.wireTo) {
        uint32_t best = mesh.members.front();
        bool bestLocal = false;
        for (uint32_t r : mesh.members) {
          const bool local = nodeOf(r) == nodeOf(dst);
          if ((local && !bestLocal) || (local == bestLocal && load[r] < load[best])) {
            best = r;
            bestLocal = local;
          }
        }
        load[best] += bytes;
        bySender[best].push_back({dst, bytes});
      }
      // Start: the mesh's previous full_tensor() done (one communicator),
      // and on every member enough of its earlier tasks finished that this
      // one's temporary memory fits under the watermark.
      StepId ready = g.join();
      g.dep(lastGather[task.mesh], ready);
      g.dep(groupStart, ready);
      for (uint32_t r : mesh.members) {
        double need = task.train;
        if (auto s = bySender.find(r); s != bySender.end())
          for (const auto& d : s->second) need += d.second;
        auto& q = flight[r];
        while (!q.empty() && held[r] + need > watermark) {
          g.dep(q.front().end, ready);
          held[r] -= q.front().bytes;
          q.pop_front();
        }
      }
      StepId gathered = g.join();
      for (const auto& members : mesh.shardGroups) {
        StepId ops = miles::hostOps(x, members.front(), task.tensors * kGatherOps, 0, sPrep);
        g.dep(ready, ops);
        StepId ag =
            members.size() > 1 ? miles::allGather(x, members, task.train, ops, sGather) : ops;
        g.dep(ag, gathered);
      }
      lastGather[task.mesh] = gathered;
      g.dep(gathered, gathersDone);
      // Each sender prepares (fusion, quantization) what it sends, then
      // writes every receiver's slice into its GPU memory.
      std::map<uint32_t, StepId> endOf;
      for (const auto& [src, list] : bySender) {
        double trainBytes = 0, wireBytes = 0;
        for (const auto& [dst, bytes] : list) {
          wireBytes += bytes;
          trainBytes += task.trainTo.at(dst);
        }
        StepId ops = miles::hostOps(
            x, src, task.tensors * kPrepareOps + static_cast<double>(list.size()) * kPostOps, 0,
            sPrep);
        g.dep(gathered, ops);
        StepId conv = g.add(
            miles::sizedStep(plan::StepKind::kDevicePass, src, trainBytes + wireBytes, sPrep));
        g.dep(ops, conv);
        StepId sent = g.join();
        for (const auto& [dst, bytes] : list) {
          StepId w = gpuSend(x, src, dst, bytes, sWrite);
          g.dep(conv, w);
          g.dep(w, sent);
        }
        g.dep(sent, allDone);
        endOf[src] = sent;
      }
      for (uint32_t r : mesh.members) {
        auto e = endOf.find(r);
        double bytes = task.train;
        if (auto s = bySender.find(r); s != bySender.end())
          for (const auto& d : s->second) bytes += d.second;
        flight[r].push_back({e != endOf.end() ? e->second : gathered, bytes});
        held[r] += bytes;
      }
    }
    // After every full_tensor() of the group: a global barrier (Gloo over
    // Ethernet) before the next group's meshes start theirs.
    StepId barrier = g.add(plan::StepKind::kControlRound, 0, kBarrierRounds, sBarrier);
    g.dep(gathersDone, barrier);
    g.dep(barrier, allDone);
    groupStart = barrier;
  }
  StepId end = g.add(plan::StepKind::kControlRound, 0, kStaticScheduleCloseRounds, sRounds);
  g.dep(allDone, end);
  TIDE_RETURN_IF_ERROR(p.validate());
  return p;
}

}  // namespace tide::sync::designs
