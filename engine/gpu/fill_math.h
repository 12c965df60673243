#pragma once
// The synthetic-weight generator (workloads/weights.h, rl_update.h, rng.h)
// for one element, as the GPU fill kernel runs it: the same counter-based
// hashes, the same float expressions in the same order. It matches the host
// bit for bit because every float operation is IEEE-exact (add, mul, div,
// sqrt) and nothing is contracted into FMA: GCC's -std=c++20 default on the
// host, --fmad=false for nvcc (cmake/TideDeps.cmake). tests/engine/gpu
// checks this header against SyntheticWeights on the host.

#include <cmath>
#include <cstdint>

#include "engine/gpu/hd.h"

namespace tide::gpu {

inline constexpr int kFillMaxDims = 8;

// One AdamW step of a tensor's schedule (AdamSchedule::Step), with the
// step's gradient stream key and the gradient scale folded in.
struct FillStep {
  uint64_t gradKey = 0;  // streamKey(seed, tensor, step, kStreamGrad)
  float gs = 0;          // gradStd * gradScale
  float lrOverBc1 = 0;
  float invBc2 = 0;
  uint32_t active = 0;
};

// Everything one element of one tensor at one version needs.
struct FillParams {
  uint64_t initKey = 0;  // streamKey(seed, tensor, 0, kStreamInit)
  uint64_t dirKey = 0;   // streamKey(seed, tensor, 0, kStreamDirection)
  float mean = 0, sd = 0;
  float b1 = 0, b2 = 0, eps = 0, decay = 0, sig = 0, noise = 0;
  int version = 0;
  const float* table = nullptr;     // normalTable(): 65536 floats
  const FillStep* steps = nullptr;  // steps[0 .. version)
};

// A box of a tensor: extents and, per dim, the flat stride and the box's low corner.
struct BoxGeom {
  int ndim = 0;
  uint64_t lo[kFillMaxDims] = {};
  uint64_t extent[kFillMaxDims] = {};
  uint64_t stride[kFillMaxDims] = {};  // of the whole tensor, row-major
};

TIDE_HD inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

TIDE_HD inline uint64_t counterHash(uint64_t key, uint64_t counter) {
  return mix64(key + counter * 0x9e3779b97f4a7c15ull);
}

TIDE_HD inline float normalFromBits(uint64_t h) {
  const float s =
      static_cast<float>((h & 0xffff) + ((h >> 16) & 0xffff) + ((h >> 32) & 0xffff) + (h >> 48));
  return (s - 131070.0f) * (1.0f / 37837.23f);
}

// bf16 bits of a float, nearest even, NaN kept a NaN (workloads::toBf16).
TIDE_HD inline uint16_t toBf16(float f) {
  uint32_t u = floatBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

// Flat index (row-major over the tensor) of element j (row-major over the box).
TIDE_HD inline uint64_t boxElementFlat(const BoxGeom& g, uint64_t j) {
  uint64_t flat = 0;
  for (int d = g.ndim - 1; d >= 0; --d) {
    const uint64_t e = g.extent[d];
    const uint64_t i = j % e;
    j /= e;
    flat += (g.lo[d] + i) * g.stride[d];
  }
  return flat;
}

// The bf16 bits of element `flat` at p.version.
TIDE_HD inline uint16_t fillElement(const FillParams& p, uint64_t flat) {
  const uint64_t h = counterHash(p.initKey, flat >> 2);
  float master = p.mean + p.sd * p.table[(h >> (16 * (flat & 3))) & 0xffff];
  if (p.version <= 0) return toBf16(master);
  const float dir = normalFromBits(counterHash(p.dirKey, flat));
  float m = 0.0f, v = 0.0f;
  for (int s = 0; s < p.version; ++s) {
    const FillStep& st = p.steps[s];
    if (!st.active) continue;
    const float g = st.gs * (p.sig * dir + p.noise * normalFromBits(counterHash(st.gradKey, flat)));
    m = p.b1 * m + (1.0f - p.b1) * g;
    v = p.b2 * v + (1.0f - p.b2) * g * g;
    const float update = st.lrOverBc1 * m / (sqrtf(v * st.invBc2) + p.eps);
    master = master - update - p.decay * master;
  }
  return toBf16(master);
}

}  // namespace tide::gpu
