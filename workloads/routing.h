#pragma once
// Routing trace: tokens each routed expert receives, per RL step x MoE layer x
// expert. Generated from a skewed, configurable popularity distribution; the
// RL update gives an expert a gradient in a step only when its count is > 0.

#include <cstdint>
#include <vector>

#include "engine/core/status.h"
#include "workloads/model.h"

namespace tide::workloads {

struct RoutingConfig {
  uint64_t seed = 1;
  uint64_t tokensPerStep = 262144;  // tokens through each MoE layer per step (batch x length)
  // Expert popularity p_e ~ 1 / rank_e^zipf, rank a fixed random permutation
  // per layer; 0 = uniform.
  double zipf = 1.0;
  // Per-step log-normal jitter of each expert's popularity (sigma of ln p).
  double jitter = 0.3;
};

// Counts are approximately multinomial(tokensPerStep * topK, p): each expert's
// count is drawn independently (Poisson below a mean of 64, normal above).
struct RoutingTrace {
  int steps = 0;
  int moeLayers = 0;
  int experts = 0;
  int firstMoeLayer = 0;         // decoder layer index of MoE layer 0
  std::vector<uint32_t> counts;  // [step][moeLayer][expert], step 0 = RL step 1

  uint32_t tokens(int step, int moeLayer, int expert) const {
    return counts[(static_cast<size_t>(step) * moeLayers + moeLayer) * experts + expert];
  }
  bool empty() const { return counts.empty(); }
  Status validate() const;  // sizes consistent
};

RoutingTrace generateRouting(const ModelSpec& spec, const RoutingConfig& cfg, int steps);

}  // namespace tide::workloads
