#pragma once
// Parameter sweeps of a scenario: inference EP (engine size), inference node
// count (engines), NIC bandwidth. The scenario names exactly two
// strategies, a broadcast design first and a p2p design second; each point
// simulates both and records the second's time over the first's (the
// p2p/broadcast ratio; above 1, p2p loses).

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "sim/scenario.h"
#include "sim/simulator.h"

namespace tide::sim {

struct SweepPoint {
  std::string axis;  // "infer_ep", "infer_nodes", "nic_gbps"
  double value = 0;
  double broadcastSeconds = 0;
  double p2pSeconds = 0;
  double ratio() const { return broadcastSeconds > 0 ? p2pSeconds / broadcastSeconds : 0; }
};

struct SweepAxes {
  std::vector<int> inferEp;     // engine size: TP = EP = value
  std::vector<int> inferNodes;  // engines scale with nodes
  std::vector<double> nicGbps;  // per-NIC GB/s
};

// Applies one sweep value to a copy of the scenario.
Result<Scenario> applyPoint(const Scenario& base, const std::string& axis, double value);
Result<std::vector<SweepPoint>> runSweep(const Scenario& base, const SweepAxes& axes,
                                         const StrategySimulator& simulate);
std::string sweepCsv(const std::vector<SweepPoint>& pts);
nlohmann::json sweepJson(const std::vector<SweepPoint>& pts);

}  // namespace tide::sim
