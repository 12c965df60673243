#include "sim/sweep.h"

#include <algorithm>
#include <cstdio>

#include "sim/simulator.h"

namespace tide::sim {

Result<Scenario> applyPoint(const Scenario& base, const std::string& axis, double value) {
  Scenario s = base;
  int g = s.cluster.gpusPerNode;
  int inferGpus = s.sharesTrainNodes() ? s.infer.worldSize() : s.inferNodes * g;
  if (axis == "infer_ep") {
    int ep = static_cast<int>(value);
    if (ep <= 0 || inferGpus % ep != 0)
      return TIDE_ERROR(Code::kInvalidArgument,
                        "infer_ep " + std::to_string(ep) + " does not divide the inference GPUs");
    s.infer.tp = ep;
    s.infer.ep = ep;
    s.infer.engines = inferGpus / ep;
    while (s.infer.dpAttn > 1 && ep % s.infer.dpAttn != 0) s.infer.dpAttn /= 2;
    s.infer.dpAttn = std::min(s.infer.dpAttn, ep);
  } else if (axis == "infer_nodes") {
    if (s.sharesTrainNodes())
      return TIDE_ERROR(Code::kInvalidArgument,
                        "infer_nodes: the scenario's engines share the training nodes ([infer] "
                        "nodes = 0); sweep node counts on a scenario whose engines have nodes of "
                        "their own");
    int nodes = static_cast<int>(value);
    int engineGpus = s.infer.tp;
    if (nodes <= 0 || (nodes * g) % engineGpus != 0)
      return TIDE_ERROR(Code::kInvalidArgument,
                        "infer_nodes " + std::to_string(nodes) + " does not hold whole engines");
    s.inferNodes = nodes;
    s.infer.engines = nodes * g / engineGpus;
  } else if (axis == "nic_gbps") {
    if (value <= 0) return TIDE_ERROR(Code::kInvalidArgument, "nic_gbps must be > 0");
    s.cluster.nicBps = value * 1e9;
  } else {
    return TIDE_ERROR(Code::kInvalidArgument, "unknown sweep axis '" + axis + "'");
  }
  s.cluster.nodes = s.trainNodes + s.inferNodes;
  TIDE_RETURN_IF_ERROR(validateScenario(s));
  return s;
}

Result<std::vector<SweepPoint>> runSweep(const Scenario& base, const SweepAxes& axes,
                                         const StrategySimulator& simulate) {
  if (base.strategy.names.size() != 2)
    return TIDE_ERROR(Code::kInvalidArgument,
                      "a sweep compares two strategies, a broadcast and a p2p design; the "
                      "scenario names " +
                          std::to_string(base.strategy.names.size()));
  std::vector<std::pair<std::string, double>> todo;
  for (int v : axes.inferEp) todo.push_back({"infer_ep", v});
  for (int v : axes.inferNodes) todo.push_back({"infer_nodes", v});
  for (double v : axes.nicGbps) todo.push_back({"nic_gbps", v});
  std::vector<SweepPoint> out;
  for (const auto& [axis, value] : todo) {
    TIDE_ASSIGN_OR_RETURN(Scenario s, applyPoint(base, axis, value));
    SweepPoint p{axis, value};
    TIDE_ASSIGN_OR_RETURN(StrategyResult b, simulate(s, s.strategy.names[0]));
    TIDE_ASSIGN_OR_RETURN(StrategyResult q, simulate(s, s.strategy.names[1]));
    p.broadcastSeconds = b.seconds;
    p.p2pSeconds = q.seconds;
    out.push_back(p);
  }
  return out;
}

std::string sweepCsv(const std::vector<SweepPoint>& pts) {
  std::string s = "axis,value,broadcast_seconds,p2p_seconds,p2p_over_broadcast\n";
  char line[256];
  for (const auto& p : pts) {
    std::snprintf(line, sizeof line, "%s,%g,%.6f,%.6f,%.6f\n", p.axis.c_str(), p.value,
                  p.broadcastSeconds, p.p2pSeconds, p.ratio());
    s += line;
  }
  return s;
}

nlohmann::json sweepJson(const std::vector<SweepPoint>& pts) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& p : pts) {
    a.push_back({{"axis", p.axis},
                 {"value", p.value},
                 {"broadcast_seconds", p.broadcastSeconds},
                 {"p2p_seconds", p.p2pSeconds},
                 {"p2p_over_broadcast", p.ratio()}});
  }
  return {{"schema", "tide.sim.sweep/1"}, {"points", a}};
}

}  // namespace tide::sim
