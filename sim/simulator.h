#pragma once
// Simulates one weight update of a scenario with one strategy: builds the
// topology and the strategy's work graph, runs it, and reports the update
// time, the per-stage breakdown, the physical lower bound (the most loaded
// link's bytes over its capacity) and its bottleneck, and the events.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/status.h"
#include "sim/executor.h"
#include "sim/model_shares.h"
#include "sim/scenario.h"

namespace tide::sim {

struct StrategyResult {
  std::string scenario;
  std::string strategy;
  double seconds = 0;
  std::vector<StageStats> stages;
  double lowerBoundSeconds = 0;
  std::string bottleneck;  // link name of the lower bound
  double wireBytes = 0;    // bytes of the model as sent
  double bytesPerInferRank = 0;
  int bucketsPerStage = 0;
  double mergeFactor = 1;
  double registrationSeconds = 0;
  // The update's three spans, as the RL framework times them: prepare (the
  // control rounds that pause the engines and open the session, and a first
  // update's registration); transfer (`update_weights_implementation`: from
  // the first gather to the last byte landed and loaded); finalize
  // (`finalize_and_resume_engines`: post-processing on the engines, the
  // closing rounds; a broadcast's re-quantization, which its engines run
  // inside the loads, is counted here too). A graph without the control
  // rounds (a lowered plan) is all transfer.
  double prepareSeconds = 0, transferSeconds = 0, finalizeSeconds = 0;
  // The whole update for "", else the span "prepare", "transfer" or
  // "finalize".
  double spanSeconds(std::string_view span) const {
    if (span == "prepare") return prepareSeconds;
    if (span == "transfer") return transferSeconds;
    if (span == "finalize") return finalizeSeconds;
    return seconds;
  }
  uint64_t tasks = 0;
  uint64_t flows = 0;
  double wallSeconds = 0;
  double eventsPerSecond = 0;
  std::vector<SimEvent> events;
  std::vector<std::string> stageNames;

  nlohmann::json toJson() const;
};

// Lower bound of a graph on its solver: max over links of bytes / capacity.
void linkLowerBound(const WorkGraph& g, const FlowSolver& s, double* seconds,
                    std::string* bottleneck);

[[nodiscard]] Result<StrategyResult> simulate(const Scenario& sc, const std::string& strategy);
// The shares `simulate` works from: the scenario's model and layouts, cut
// into buckets of the strategy's run.
ModelShares scenarioShares(const Scenario& sc, std::string_view strategy);

// Moves an execution's time, stages, counters and events into `r`.
void takeExecution(StrategyResult& r, ExecResult&& ex, const WorkGraph& g);

}  // namespace tide::sim
