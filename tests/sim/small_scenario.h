#pragma once
// A small scenario for the simulator's tests: Qwen3-30B-A3B trained on two
// nodes (TP4 PP2 EP8), its inference layout and nodes given, bf16 on the wire.

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "engine/sync/strategy_registry.h"
#include "harness/sim/scenario_plans.h"
#include "sim/scenario.h"

namespace tide::sim {

inline std::string scenarioText(const std::string& infer, int inferNodes,
                                const std::string& extra = "") {
  return R"(
name = "small"
[model]
zoo = "qwen3-30b-a3b"
[train]
layout = "tp=4,pp=2,ep=8,dp=2"
nodes = 2
[infer]
layout = ")" +
         infer + R"("
nodes = )" +
         std::to_string(inferNodes) +
         R"(
[cluster]
gpus_per_node = 8
nic = "47.5GB/s"
nvlink = "370GB/s"
pcie_h2d = "55GB/s"
pcie_d2h = "47GB/s"
host_mem = "100GB/s"
[strategy]
bucket = "1GB"
wire_dtype = "bf16"
)" + extra;
}

inline Scenario load(const std::string& text) {
  auto s = parseScenario(text, "test");
  if (!s.isOk()) ADD_FAILURE() << s.status().toString();
  return std::move(s).value();
}

// Plans and simulates one strategy of a scenario, as `tide sim` does.
inline Result<StrategyResult> simulate(const Scenario& sc, std::string_view strategy) {
  return harness::simulateStrategy(sc, strategy);
}

// The plan of one strategy of a scenario, as `tide sim` builds it.
inline plan::TransferPlan planOf(const Scenario& sc, std::string_view name) {
  auto d = sync::findStrategy(name);
  EXPECT_TRUE(d.isOk());
  auto p = harness::scenarioPlan(sc, **d);
  if (!p.isOk()) ADD_FAILURE() << p.status().toString();
  return std::move(p).value();
}

}  // namespace tide::sim
