#include "workloads/rl_update.h"

#include <cmath>

#include "workloads/rng.h"

namespace tide::workloads {

AdamSchedule buildSchedule(const RlConfig& cfg, const std::vector<float>& gradScales) {
  AdamSchedule s;
  s.steps.resize(gradScales.size());
  int k = 0;  // the tensor's own step count (bias correction)
  for (size_t i = 0; i < gradScales.size(); ++i) {
    AdamSchedule::Step& st = s.steps[i];
    st.gradScale = gradScales[i];
    st.active = gradScales[i] > 0 || !cfg.skipNoGrad;
    if (!st.active) continue;
    ++k;
    st.lrOverBc1 = static_cast<float>(cfg.lr / (1.0 - std::pow(cfg.beta1, k)));
    st.invBc2 = static_cast<float>(1.0 / (1.0 - std::pow(cfg.beta2, k)));
  }
  return s;
}

void adamStep(const RlConfig& cfg, uint64_t gradKey, const AdamSchedule::Step& st,
              const uint64_t* flat, const float* dir, size_t n, float* master, float* m, float* v) {
  if (!st.active) return;
  const float b1 = static_cast<float>(cfg.beta1), b2 = static_cast<float>(cfg.beta2);
  const float eps = static_cast<float>(cfg.eps);
  const float decay = static_cast<float>(cfg.lr * cfg.weightDecay);
  const float gs = static_cast<float>(cfg.gradStd) * st.gradScale;
  const float sig = static_cast<float>(cfg.signal);
  const float noise = std::sqrt(std::max(0.0f, 1.0f - sig * sig));
  for (size_t j = 0; j < n; ++j) {
    const float g = gs * (sig * dir[j] + noise * normalFromBits(counterHash(gradKey, flat[j])));
    m[j] = b1 * m[j] + (1.0f - b1) * g;
    v[j] = b2 * v[j] + (1.0f - b2) * g * g;
    const float update = st.lrOverBc1 * m[j] / (std::sqrt(v[j] * st.invBc2) + eps);
    master[j] = master[j] - update - decay * master[j];  // AdamW: decoupled decay
  }
}

double ChangeStats::fraction(int step, uint32_t tensor) const {
  const uint64_t n = checked[tensor];
  if (n == 0 || step < 1 || step > steps) return 0;
  return static_cast<double>(
             changedSampled[static_cast<size_t>(step - 1) * checked.size() + tensor]) /
         static_cast<double>(n);
}

double ChangeStats::halfWidth95(int step, uint32_t tensor) const {
  if (exact) return 0;
  const double n = static_cast<double>(checked[tensor]);
  if (n == 0) return 1;
  const double p = fraction(step, tensor), z = 1.96, z2 = z * z;
  // Wilson score interval: half-width around its centre.
  return z * std::sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n);
}

}  // namespace tide::workloads
