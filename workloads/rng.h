#pragma once
// Counter-based random numbers: a pure function of (seed, stream, counter), so
// any element of any tensor and version can be produced anywhere, in any
// order, without state. The mixer is SplitMix64's finalizer applied to a
// keyed counter (a strong 64-bit bijection; statistically sound for
// synthetic data, not for cryptography).

#include <cmath>
#include <cstdint>

namespace tide::workloads {

constexpr uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Key of one random stream: seed, tensor, version / step and purpose.
constexpr uint64_t streamKey(uint64_t seed, uint64_t tensor, uint64_t version, uint64_t purpose) {
  return mix64(mix64(mix64(seed ^ 0x9e3779b97f4a7c15ull) ^ (tensor * 0xd1b54a32d192ed03ull)) ^
               (version * 0xa0761d6478bd642full) ^ (purpose << 56));
}

constexpr uint64_t counterHash(uint64_t key, uint64_t counter) {
  return mix64(key + counter * 0x9e3779b97f4a7c15ull);
}

// Approximately standard normal: Irwin-Hall sum of four 16-bit uniforms,
// centred and scaled to unit variance (support +-3.46 sigma).
inline float normalFromBits(uint64_t h) {
  const float s =
      static_cast<float>((h & 0xffff) + ((h >> 16) & 0xffff) + ((h >> 32) & 0xffff) + (h >> 48));
  // mean 4 * 32767.5, variance 4 * (65536^2 - 1) / 12
  return (s - 131070.0f) * (1.0f / 37837.23f);
}

// Standard normal quantile of the 16-bit uniform u: Phi^-1((u + 0.5) / 65536)
// from a table built once (bf16 keeps 8 significant bits, so 16-bit inputs
// lose nothing). Four normals per 64-bit hash: the fast initial-weight path.
const float* normalTable();
inline float normalFromU16(const float* table, uint64_t h, unsigned chunk) {
  return table[(h >> (16 * chunk)) & 0xffff];
}

// Uniform in [0, 1) with 53 bits.
inline double uniformFromBits(uint64_t h) {
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

}  // namespace tide::workloads
