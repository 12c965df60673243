#include "workloads/rl_update.h"

#include <cmath>

#include "workloads/rng.h"
#include "workloads/simd.h"

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

namespace {

struct AdamConsts {
  float b1, b2, eps, decay, gs, sig, noise, lrOverBc1, invBc2;
};

// The AdamW loop; inlined into a baseline and an AVX-512 copy (simd.h).
[[gnu::always_inline]] inline void adamLoop(const AdamConsts& k, uint64_t gradKey,
                                            const uint64_t* flat, const float* dir, size_t n,
                                            float* master, float* m, float* v) {
  for (size_t j = 0; j < n; ++j) {
    const float g =
        k.gs * (k.sig * dir[j] + k.noise * normalFromBits(counterHash(gradKey, flat[j])));
    m[j] = k.b1 * m[j] + (1.0f - k.b1) * g;
    v[j] = k.b2 * v[j] + (1.0f - k.b2) * g * g;
    const float update = k.lrOverBc1 * m[j] / (std::sqrt(v[j] * k.invBc2) + k.eps);
    master[j] = master[j] - update - k.decay * master[j];  // AdamW: decoupled decay
  }
}

TIDE_TARGET_AVX512 void adamLoopAvx512(const AdamConsts& k, uint64_t gradKey, const uint64_t* flat,
                                       const float* dir, size_t n, float* master, float* m,
                                       float* v) {
  adamLoop(k, gradKey, flat, dir, n, master, m, v);
}

}  // namespace

void adamStep(const RlConfig& cfg, uint64_t gradKey, const AdamSchedule::Step& st,
              const uint64_t* flat, const float* dir, size_t n, float* master, float* m, float* v) {
  if (!st.active) return;
  AdamConsts k;
  k.b1 = static_cast<float>(cfg.beta1);
  k.b2 = static_cast<float>(cfg.beta2);
  k.eps = static_cast<float>(cfg.eps);
  k.decay = static_cast<float>(cfg.lr * cfg.weightDecay);
  k.gs = static_cast<float>(cfg.gradStd) * st.gradScale;
  k.sig = static_cast<float>(cfg.signal);
  k.noise = std::sqrt(std::max(0.0f, 1.0f - k.sig * k.sig));
  k.lrOverBc1 = st.lrOverBc1;
  k.invBc2 = st.invBc2;
  if (cpuHasAvx512()) {
    adamLoopAvx512(k, gradKey, flat, dir, n, master, m, v);
  } else {
    adamLoop(k, gradKey, flat, dir, n, master, m, v);
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
  return wilsonHalfWidth95(fraction(step, tensor), n);
}

double wilsonHalfWidth95(double p, double n) {
  const double z = 1.96, z2 = z * z;
  // Wilson score interval: half-width around its centre.
  return z * std::sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n);
}

}  // namespace tide::workloads
