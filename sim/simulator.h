#pragma once
// The result of simulating one weight update with one strategy: the update
// time, the per-stage breakdown, the physical lower bound (the most loaded
// link's bytes over its capacity) and its bottleneck, and the events. The
// simulator runs plans only (plan_lowering.h); a caller makes the plan with
// the strategy's builder (engine/sync/strategy_registry.h).

#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/status.h"
#include "engine/plan/transfer_plan.h"
#include "sim/executor.h"
#include "sim/scenario.h"

namespace tide::sim {

// Who chose the cost profile that priced a result.
enum class ProfileChoice : uint8_t {
  kNotRecorded,
  kScenario,  // the scenario's [strategy] profile
  kStrategy,  // the strategy's own
  kDefault,   // the strategy names none: the scenario's default
};
const char* profileChoiceName(ProfileChoice c);  // "scenario", "strategy", "default"

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
  // inside the loads, is counted here too). A plan without the control
  // rounds (steps in kStageRounds) is all transfer.
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
  // Max-min re-solves and the flows they re-rated in all: the simulation's
  // cost grows with solvedFlows (a solve re-rates the flows sharing links).
  uint64_t solves = 0;
  uint64_t solvedFlows = 0;
  double wallSeconds = 0;  // the simulation's
  double eventsPerSecond = 0;
  // Set by the caller that made the plan: its CPU time, and the process's
  // peak resident memory once simulated (0: not measured).
  double planCpuSeconds = 0;
  double peakRssBytes = 0;
  std::vector<SimEvent> events;
  std::vector<std::string> stageNames;
  // The cost profile that priced the update, who chose it, the strategy's
  // own where the scenario's replaced it, and its constants as applied (key,
  // seconds). Set by the caller that chose it (sim::recordProfile).
  std::string profileName, profileOwn;
  ProfileChoice profileChoice = ProfileChoice::kNotRecorded;
  std::vector<std::pair<std::string, double>> profileConstants;

  nlohmann::json toJson() const;
};

// Lower bound of a graph on its solver: max over links of bytes / capacity.
void linkLowerBound(const WorkGraph& g, const FlowSolver& s, double* seconds,
                    std::string* bottleneck);

// Simulates `plan`, a strategy's plan for `sc`, on the scenario's cluster
// with its cost profile (and overrides). A box-level plan keeps at most
// `max_sim_buckets` bucket groups, fewer while its moves would make more
// than kScenarioMaxFlows flows. The solve's cost grows with the square of
// the flows that share links: Kimi-K2's p2p plan (922 k moves over 958
// buckets, `tide sim --scenario scenarios/kimi-k2-miles.toml --strategy
// p2p`) takes 1.3 s in one group (10 k flows), 7.6 s in two (16 k), 174 s
// in 64 (66 k), and its update is 0.5 % longer in one group than in 64.
inline constexpr size_t kScenarioMaxFlows = 12000;
[[nodiscard]] Result<StrategyResult> simulateScenario(const Scenario& sc,
                                                      const plan::TransferPlan& plan,
                                                      const Progress& progress = {});
// Plans and simulates one named strategy of a scenario: given by the caller,
// which owns the strategy table (sim/ runs plans, it does not make them).
using StrategySimulator =
    std::function<Result<StrategyResult>(const Scenario& sc, std::string_view strategy)>;

// Moves an execution's time, stages, counters and events into `r`.
void takeExecution(StrategyResult& r, ExecResult&& ex, const WorkGraph& g);

}  // namespace tide::sim
