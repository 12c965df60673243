#pragma once
// Runs a WorkGraph on a FlowSolver: a discrete-event loop over timers
// (delays, latencies) and flow completions, with max-min fair rates re-solved
// once per event time.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "sim/flow_solver.h"
#include "sim/work_graph.h"

namespace tide::sim {

struct SimEvent {
  double tStart = 0;
  double tEnd = 0;
  int32_t src = -1;
  int32_t dst = -1;
  double bytes = 0;
  uint16_t stage = 0;
  TaskPath path = TaskPath::kCompute;
  uint32_t unit = kNoUnit;  // the schedule's unit it prices, and which piece
  uint32_t piece = 0;
};

struct StageStats {
  std::string name;
  double first = 0;  // first start
  double last = 0;   // last end
  double busy = 0;   // length of the union of its task intervals
  // Its share of the critical path: the chain of tasks, each made ready by
  // the one before it (its last dependency, or the release of the lock it
  // waited for), that ends with the last task. The shares add up to the
  // makespan.
  double critical = 0;
  double bytes = 0;
  uint64_t tasks = 0;
};

struct ExecResult {
  double makespan = 0;
  std::vector<SimEvent> events;
  std::vector<StageStats> stages;
  uint64_t tasksRun = 0;
  uint64_t flows = 0;
  uint64_t solves = 0;
  uint64_t solvedFlows = 0;
  double wallSeconds = 0;
  double eventsPerSecond() const { return wallSeconds > 0 ? tasksRun / wallSeconds : 0; }
};

// When a polled lock is released, how much of its period each sleeping
// waiter still sleeps, as a fraction in [0, 1). The waiters' sleeps drift
// against each other and against the holder's work (each try is a remote
// call of varying latency), so the default draws it uniformly from a
// generator with a fixed seed: runs repeat exactly.
using PollResidual = std::function<double()>;

// Told, about every `progressSeconds` of wall time (checked every 4096
// events), how many tasks of how many have finished and the simulated time
// reached: a long run says it is alive. Short runs never call it.
using Progress = std::function<void(uint64_t done, uint64_t total, double simSeconds)>;
inline constexpr double kProgressSeconds = 10;

// Fails when the graph cannot finish (a dependency cycle or a lock never
// released) or a flow can never progress (a zero-capacity link).
[[nodiscard]] Result<ExecResult> execute(WorkGraph& graph, FlowSolver& solver,
                                         PollResidual residual = {}, Progress progress = {},
                                         double progressSeconds = kProgressSeconds);

}  // namespace tide::sim
