#pragma once
// `tide sync --replay F.h5`: the weight versions that a trace written by
// `tide trace gen` defines. A trace holds the generator's parameters (seed,
// AdamW settings) and the routing of every step, from which the seeded
// generator reproduces every element of every version; replaying it makes a
// sync run update exactly those versions.

#include <string>

#include "engine/core/status.h"
#include "workloads/model.h"
#include "workloads/rl_update.h"
#include "workloads/routing.h"

namespace tide::harness {

struct ReplaySource {
  std::string path;  // empty: the generator's defaults, no trace
  workloads::RoutingTrace routing;
  workloads::RlConfig rl;
  int traceSteps = 0;
};

// Reads `path` and checks it fits the run: the same model and scale, the
// same tensors, at least `steps` RL steps. An empty path gives the defaults.
Result<ReplaySource> loadReplay(const std::string& path, const workloads::ModelSpec& spec,
                                const workloads::ModelInventory& inventory, int steps);

}  // namespace tide::harness
