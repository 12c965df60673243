#pragma once
// The RL step generator: AdamW on FP32 master weights with synthetic
// gradients. The BF16 cast of the master decides which elements change, so
// the changed fraction per tensor / per expert is measured, not assumed.
//
// Gradient of element i of tensor t at step s (1-based):
//   g = gradStd * scale(t, s) * (signal * d_i + sqrt(1 - signal^2) * n_{i,s})
// with d_i, n_{i,s} counter-based standard normals (d_i fixed per element: a
// persistent gradient direction). scale(t, s) = 1 for dense tensors; for a
// routed expert it is sqrt(tokens / mean tokens) of that step and expert, and
// 0 when the expert got no tokens: then, as in PyTorch when p.grad is None,
// the optimizer skips the tensor for that step (no decay, no momentum, no
// step-count increment). With skipNoGrad = false the step runs with g = 0
// (Megatron's zero-filled grad buffers): momentum and decay still move it.

#include <cstdint>
#include <vector>

#include "engine/core/status.h"

namespace tide::workloads {

struct RlConfig {
  uint64_t seed = 1;
  double lr = 1e-6;  // typical RL actor learning rate (verl / OpenRLHF defaults)
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weightDecay = 0.01;
  double gradStd = 1e-3;
  double signal = 0.3;  // share of the gradient that is a persistent direction
  bool skipNoGrad = true;
};

// Per tensor, per step: whether AdamW runs and its constants. Step s at index s-1.
struct AdamSchedule {
  struct Step {
    float gradScale = 0;  // 0 with skipNoGrad: the step is skipped
    bool active = false;
    float lrOverBc1 = 0;  // lr / (1 - beta1^k), k = this tensor's own step count
    float invBc2 = 0;     // 1 / (1 - beta2^k)
  };
  std::vector<Step> steps;
};

AdamSchedule buildSchedule(const RlConfig& cfg, const std::vector<float>& gradScales);

// Random-stream purposes (the last argument of streamKey()).
inline constexpr uint64_t kStreamInit = 1;       // initial weights, version 0
inline constexpr uint64_t kStreamDirection = 2;  // persistent gradient direction d_i
inline constexpr uint64_t kStreamGrad = 3;       // per-step gradient noise n_{i,s}
inline constexpr uint64_t kStreamRouting = 4;
inline constexpr uint64_t kStreamRollout = 5;

// One AdamW step over n elements. gradKey = streamKey(seed, tensor, step,
// kStreamGrad); flat[j] is element j's flat index, dir[j] its d_j.
void adamStep(const RlConfig& cfg, uint64_t gradKey, const AdamSchedule::Step& st,
              const uint64_t* flat, const float* dir, size_t n, float* master, float* m, float* v);

// Changed-element statistics of a run: for each step s (1..steps) and tensor,
// the number of elements whose bf16 value differs between versions s-1 and s.
// exact: every element checked; otherwise a fixed sample per tensor.
struct ChangeStats {
  int steps = 0;
  bool exact = false;
  uint64_t samplePerTensor = 0;          // elements checked per tensor (<= numel) when !exact
  std::vector<uint64_t> checked;         // per tensor: elements checked
  std::vector<uint32_t> changedSampled;  // [step][tensor]: changed among the checked
  std::vector<uint64_t> everChanged;     // per tensor: checked elements changed in any step
  // Exact runs that record them (else both empty): the flat indices of the
  // changed elements of (step s, tensor t) are changedIndices[indexOffsets[i]
  // .. indexOffsets[i + 1]), i = (s - 1) * tensors + t, ascending.
  std::vector<uint64_t> indexOffsets;  // steps * tensors + 1
  std::vector<uint32_t> changedIndices;

  // Estimated changed fraction of tensor t in step s (1-based).
  double fraction(int step, uint32_t tensor) const;
  // Half-width of the 95 % confidence interval of that fraction (Wilson score
  // interval; 0 when exact).
  double halfWidth95(int step, uint32_t tensor) const;
};

// Half-width of the 95 % Wilson score interval of a fraction p measured on n elements.
double wilsonHalfWidth95(double p, double n);

}  // namespace tide::workloads
