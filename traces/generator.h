#pragma once
// `tide trace gen`: model + scale + steps -> a complete trace file: routing
// for every step, per-tensor changed counts (exact, or from a fixed sample of
// elements per tensor), rollout lengths and timing.

#include <string>

#include "engine/core/status.h"
#include "traces/trace.h"

namespace tide::traces {

struct GenerateOptions {
  std::string model = "kimi-k2";  // zoo name or TOML path
  int scale = 1;
  int steps = 100;
  uint64_t seed = 1;
  // Elements checked per tensor; 0 = exact (every element). autoExact picks
  // exact when the model has at most exactLimit parameters.
  uint64_t samplePerTensor = 512;
  bool autoExact = true;
  uint64_t exactLimit = 1ull << 24;
  bool recordIndices = true;  // exact runs: keep the flat index of every change (/delta/indices)
  int threads = 0;            // 0 = all cores
  std::string trainLayout;    // recorded in /meta when given (validated against the model)
  std::string inferLayout;
  workloads::RlConfig rl;
  workloads::RoutingConfig routing;
  workloads::RolloutConfig rollout;
};

struct GenerateReport {
  double seconds = 0;
  uint64_t elementSteps = 0;  // AdamW element updates replayed
  bool exact = false;
};

// Builds the trace in memory (no file).
Result<TraceData> generateTrace(const GenerateOptions& opts, GenerateReport* report = nullptr);

}  // namespace tide::traces
