#pragma once
// Test helper: a bf16 tensor and its next version after a small Adam-like
// step on FP32 masters, so the changed fraction comes from BF16 rounding
// rather than being chosen.

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace tide::sync::testing {

inline uint16_t toBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);  // round to nearest even
  return static_cast<uint16_t>(u >> 16);
}

struct Bf16Versions {
  std::vector<uint8_t> old, next;
};

inline Bf16Versions adamLikeStep(size_t n, double relativeStep, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> w(0.f, 0.02f), g(0.f, 1.f);
  Bf16Versions v;
  v.old.resize(2 * n);
  v.next.resize(2 * n);
  for (size_t i = 0; i < n; ++i) {
    float master = w(rng);
    // Adam's normalized step has magnitude ~lr regardless of the gradient scale.
    float step = static_cast<float>(relativeStep) * 0.02f * (g(rng) > 0 ? 1.f : -1.f);
    uint16_t a = toBf16(master), b = toBf16(master - step);
    std::memcpy(&v.old[2 * i], &a, 2);
    std::memcpy(&v.next[2 * i], &b, 2);
  }
  return v;
}

}  // namespace tide::sync::testing
