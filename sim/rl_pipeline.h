#pragma once
// RL pipeline model: rollout generation (lengths from the workloads rollout
// model, timing from its decode-throughput model), training step time from a
// token throughput, and the weight-sync time from the sync simulation.
// Synchronous RL runs generate -> train -> sync in sequence; fully-async RL
// lets generation of batch t run on weights up to K versions old.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "workloads/rollout.h"

namespace tide::sim {

struct RlConfig {
  workloads::RolloutConfig rollout;
  int steps = 20;
  double trainTokensPerSecond = 2e5;  // whole trainer, prompt + response tokens
  double syncSeconds = 0;             // one weight update (from the simulator)
  int staleness = 0;                  // K: max versions a batch may lag (async)
  bool async = false;
};

struct RlResult {
  std::string mode;
  int staleness = 0;
  double makespan = 0;
  double samplesPerSecond = 0;
  double inferenceIdle = 0;  // fraction of time inference GPUs are not generating
  double trainerIdle = 0;    // fraction of time training GPUs are not training
  double meanGenSeconds = 0;
  double meanTrainSeconds = 0;
  double syncSeconds = 0;
  std::vector<int> stalenessHistogram;  // [s] = batches generated s versions behind

  nlohmann::json toJson() const;
};

RlResult simulateRl(const RlConfig& cfg);

}  // namespace tide::sim
