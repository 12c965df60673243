#include "sim/step_lowering.h"

#include <algorithm>

namespace tide::sim {

namespace {

using plan::Step;
using plan::StepKind;

// Orders `members` node by node, rotating each node's GPUs by `c`, so that
// lane c enters and leaves every node through a different GPU and NIC.
std::vector<int> laneOrder(const Topology& topo, const std::vector<int>& members, int c) {
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

// Seconds of a counted step under the profile's constants.
double countedSeconds(const Step& s, const Calibration& k) {
  switch (s.kind) {
    case StepKind::kHostOps:
      return s.count * k.hostOpSeconds + s.loopSteps * k.pyStepSeconds;
    case StepKind::kControlRound:
      return s.count * k.engineCallSeconds;
    case StepKind::kPostprocess:
      return s.count * k.mlaRequantSeconds;
    case StepKind::kRegister:
      return s.count * k.registerPerPageSeconds;
    default:
      return 0;
  }
}

struct StepLowering {
  const plan::StepGraph& sg;
  const std::function<int(uint32_t)>& gpuOf;
  const Topology& topo;
  WorkGraph& g;
  std::vector<uint16_t> stageOf;  // plan stage -> work-graph stage

  std::vector<int> gpus(uint32_t group) const {
    std::vector<int> v;
    for (uint32_t r : sg.groups[group]) v.push_back(gpuOf(r));
    return v;
  }

  // Ring all-gather: per lane one flow over every ring edge (the edges
  // advance in lockstep), carrying (n-1)/n of the lane's share, paying the
  // ring's latency once per real collective it stands for.
  void allGather(const Step& s, uint16_t stage) {
    std::vector<int> members = gpus(s.group);
    size_t n = members.size();
    if (n <= 1 || s.bytes <= 0) return;
    for (int c = 0; c < s.lanes; ++c) {
      std::vector<int> order = laneOrder(topo, members, c);
      std::vector<LinkId> links;
      double lat = 0;
      for (size_t i = 0; i < n; ++i) {
        int a = order[i], b = order[(i + 1) % n];
        topo.appendPath(a, b, links);
        lat = std::max(lat, topo.latency(a, b));
      }
      double bytes = s.bytes * static_cast<double>(n - 1) / n / s.lanes;
      g.addFlow(g.addPath(std::move(links)), bytes, lat * (n - 1) * s.count, order[0], order[1],
                stage, TaskPath::kNccl);
    }
  }

  // Chain broadcast: per lane one flow over all hops; the pipeline fill is
  // one chunk per hop, once per real broadcast the step stands for.
  void broadcast(const Step& s, uint16_t stage) {
    int root = gpuOf(s.rank);
    std::vector<int> receivers = gpus(s.group);
    for (int c = 0; c < s.lanes; ++c) {
      std::vector<int> order = laneOrder(topo, receivers, c);
      std::vector<LinkId> links;
      double fill = 0;
      int prev = root;
      for (int r : order) {
        topo.appendPath(prev, r, links);
        double cap = topo.hopCapacity(prev, r);
        fill += topo.latency(prev, r) + (cap > 0 ? s.chunkBytes * s.lanes / cap : 0);
        prev = r;
      }
      g.addFlow(g.addPath(std::move(links)), s.bytes / s.lanes, fill * s.count, root,
                order.empty() ? root : order[0], stage, TaskPath::kNccl);
    }
  }

  TaskId flow(const Step& s, uint16_t stage) {
    int gpu = gpuOf(s.rank);
    int node = topo.nodeOf(gpu);
    switch (s.kind) {
      case StepKind::kDevicePass:
        return g.addFlow(g.addPath(onlyLink(topo.gpu(gpu).hbm)), s.bytes, 0, gpu, gpu, stage,
                         TaskPath::kCompute);
      case StepKind::kDeviceToHost: {
        std::vector<LinkId> path = onlyLink(topo.gpu(gpu).d2h);
        for (LinkId l : onlyLink(topo.hostMem(node))) path.push_back(l);
        return g.addFlow(g.addPath(std::move(path)), s.bytes, 0, gpu, gpu, stage,
                         TaskPath::kPcieD2H);
      }
      default: {  // kHostWrite: the NIC reads the pinned host buffer
        int peer = gpuOf(s.peer);
        std::vector<LinkId> path = onlyLink(topo.hostMem(node));
        topo.appendRdmaPath(gpu, peer, path);
        return g.addFlow(g.addPath(std::move(path)), s.bytes, topo.rdmaLatency(gpu, peer), gpu,
                         peer, stage, TaskPath::kRdma);
      }
    }
  }
};

}  // namespace

Result<LoweredSteps> lowerSteps(const plan::StepGraph& sg, size_t ranks,
                                const std::function<int(uint32_t)>& gpuOf, const Topology& topo,
                                const Calibration& costs, WorkGraph& g) {
  TIDE_RETURN_IF_ERROR(sg.validate(ranks));
  StepLowering x{sg, gpuOf, topo, g, {}};
  for (const auto& name : sg.stageNames) x.stageOf.push_back(g.stageId(name));
  std::vector<int32_t> lockOf;
  for (const auto& l : sg.locks) {
    double poll = l.polled ? costs.lockPollSeconds : 0;
    lockOf.push_back(poll > 0 ? g.addPolledLock(poll, x.stageOf[l.stage]) : g.addLock());
  }
  LoweredSteps out;
  out.receivedBytes.assign(ranks, 0);
  // Per step: its entry tasks [first, end) and the task that ends it.
  std::vector<TaskId> first(sg.steps.size()), end(sg.steps.size()), last(sg.steps.size());
  for (size_t i = 0; i < sg.steps.size(); ++i) {
    const Step& s = sg.steps[i];
    uint16_t stage = s.kind == StepKind::kJoin ? 0 : x.stageOf[s.stage];
    TaskId t = 0;
    switch (s.kind) {
      case StepKind::kJoin:
        t = g.addJoin();
        break;
      case StepKind::kHostOps:
      case StepKind::kControlRound:
      case StepKind::kPostprocess:
      case StepKind::kRegister: {
        double sec = countedSeconds(s, costs);
        t = g.addDelay(sec, gpuOf(s.rank), stage);
        if (s.kind == StepKind::kRegister) {
          out.registrationSeconds = std::max(out.registrationSeconds, sec);
          out.registerEnds.push_back(t);
        }
        break;
      }
      case StepKind::kDevicePass:
      case StepKind::kDeviceToHost:
      case StepKind::kHostWrite:
        t = x.flow(s, stage);
        if (s.kind == StepKind::kHostWrite) out.receivedBytes[s.peer] += s.bytes;
        break;
      case StepKind::kAllGather:
      case StepKind::kBroadcast: {
        t = g.addJoin();
        const size_t before = g.tasks().size();
        if (s.kind == StepKind::kAllGather) {
          x.allGather(s, stage);
        } else {
          x.broadcast(s, stage);
          for (uint32_t r : sg.groups[s.group]) out.receivedBytes[r] += s.bytes;
        }
        const size_t after = g.tasks().size();
        for (size_t f = before; f < after; ++f) g.dep(static_cast<TaskId>(f), t);
        first[i] = before == after ? t : static_cast<TaskId>(before);
        end[i] = before == after ? t + 1 : static_cast<TaskId>(after);
        last[i] = t;
        break;
      }
    }
    if (s.kind != StepKind::kAllGather && s.kind != StepKind::kBroadcast) {
      first[i] = t;
      end[i] = t + 1;
      last[i] = t;
    }
    if (s.acquire >= 0) g.tasks()[first[i]].acquire = lockOf[s.acquire];
    if (s.release >= 0) g.tasks()[last[i]].release = lockOf[s.release];
  }
  for (auto [a, b] : sg.edges)
    for (TaskId e = first[b]; e < end[b]; ++e) g.dep(last[a], e);
  return out;
}

}  // namespace tide::sim
