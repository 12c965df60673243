#pragma once
// Lowers a plan's steps (engine/plan/plan_steps.h) into the simulator's work
// graph: counted steps become delays priced by the cost profile's
// constants, byte steps become flows over the topology's links, collectives
// become one flow per lane over every hop, locks become work-graph locks.
// One task (or one join and one flow per lane) per step, in step order, and
// the plan's edges in their order: a plan lowers to the same graph every
// time.

#include <cstdint>
#include <functional>
#include <vector>

#include "engine/plan/plan_steps.h"
#include "sim/calibration.h"
#include "sim/topology.h"
#include "sim/work_graph.h"

namespace tide::sim {

struct LoweredSteps {
  double registrationSeconds = 0;  // the longest registration step
  // Bytes each plan rank receives by steps (writes to it, broadcasts it is
  // in the group of).
  std::vector<double> receivedBytes;
  // The tasks that end the register steps: a plan's moves use the buffers
  // these pin, so they start after them (plan_lowering.h).
  std::vector<TaskId> registerEnds;
};

// `gpuOf` maps a plan rank to its GPU id in `topo`.
[[nodiscard]] Result<LoweredSteps> lowerSteps(const plan::StepGraph& steps, size_t ranks,
                                              const std::function<int(uint32_t)>& gpuOf,
                                              const Topology& topo, const Calibration& costs,
                                              WorkGraph& g);

}  // namespace tide::sim
