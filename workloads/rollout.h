#pragma once
// Rollout model: per-sample prompt and response lengths from long-tailed
// distributions, and generation timing of a continuous-batching engine.

#include <cstdint>
#include <vector>

namespace tide::workloads {

struct RolloutConfig {
  uint64_t seed = 1;
  int samplesPerStep = 512;
  // Prompt length: log-normal (median, sigma of ln), clipped to [1, maxPrompt].
  double promptMedian = 512;
  double promptSigma = 0.6;
  uint32_t maxPrompt = 8192;
  // Response length: log-normal body plus, with probability tailProb, a Pareto
  // tail (scale tailMin, shape tailAlpha) — the long reasoning traces that
  // dominate RL step time. Clipped to [1, maxResponse].
  double responseMedian = 1500;
  double responseSigma = 0.8;
  double tailProb = 0.1;
  double tailMin = 8000;
  double tailAlpha = 1.5;
  uint32_t maxResponse = 32768;
  // Timing: prefill and per-sample decode speed, and concurrent sequences.
  double prefillTokensPerSec = 20000;
  double decodeTokensPerSec = 40;  // per sequence
  int maxConcurrent = 128;
};

struct RolloutSample {
  uint32_t promptTokens = 0;
  uint32_t responseTokens = 0;
  double startS = 0;  // when it got a decode slot, from the start of the step
  double endS = 0;    // when its last token was generated
};

// Deterministic in (seed, step). Samples are admitted in order as slots free up.
std::vector<RolloutSample> generateRollout(const RolloutConfig& cfg, int step);

}  // namespace tide::workloads
