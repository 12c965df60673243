#include "workloads/rollout.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <queue>

#include "workloads/rl_update.h"
#include "workloads/rng.h"

namespace tide::workloads {

namespace {

uint32_t clampTokens(double x, uint32_t maxTokens) {
  if (!(x >= 1)) return 1;
  return static_cast<uint32_t>(std::min<double>(std::round(x), maxTokens));
}

}  // namespace

std::vector<RolloutSample> generateRollout(const RolloutConfig& cfg, int step) {
  const int n = std::max(0, cfg.samplesPerStep);
  std::vector<RolloutSample> out(static_cast<size_t>(n));
  const uint64_t key = streamKey(cfg.seed, 0, static_cast<uint64_t>(step), kStreamRollout);
  // Continuous batching: a sample takes the earliest free slot.
  std::priority_queue<double, std::vector<double>, std::greater<>> freeAt;
  for (int i = 0; i < std::max(1, cfg.maxConcurrent); ++i) freeAt.push(0.0);
  for (int i = 0; i < n; ++i) {
    const uint64_t base = static_cast<uint64_t>(i) * 4;
    RolloutSample& s = out[i];
    s.promptTokens = clampTokens(
        cfg.promptMedian * std::exp(cfg.promptSigma * normalFromBits(counterHash(key, base))),
        cfg.maxPrompt);
    const double u = uniformFromBits(counterHash(key, base + 1));
    double resp;
    if (u < cfg.tailProb) {
      const double v = std::max(1e-12, uniformFromBits(counterHash(key, base + 2)));
      resp = cfg.tailMin / std::pow(v, 1.0 / cfg.tailAlpha);  // Pareto(tailMin, alpha)
    } else {
      resp = cfg.responseMedian *
             std::exp(cfg.responseSigma * normalFromBits(counterHash(key, base + 3)));
    }
    s.responseTokens = clampTokens(resp, cfg.maxResponse);
    s.startS = freeAt.top();
    freeAt.pop();
    s.endS = s.startS + s.promptTokens / std::max(1.0, cfg.prefillTokensPerSec) +
             s.responseTokens / std::max(1e-3, cfg.decodeTokensPerSec);
    freeAt.push(s.endS);
  }
  return out;
}

}  // namespace tide::workloads
