#pragma once
// XXH3-64 (seed 0, default secret) of inputs longer than 240 bytes, split so
// a GPU computes it in parallel yet bit-identical to the host's XXH3_64bits
// (libxxhash), which tide's verification uses (SyntheticWeights::boxChecksum,
// exec::expectedChecksum).
//
// XXH3's long-input loop keeps 8 64-bit lanes; each 64-byte stripe only ADDS
// terms that do not depend on the lanes, and after every 1 KiB block each
// lane is scrambled on its own. So: (1) in parallel, every block's per-lane
// sum of terms ("contribution"); (2) per lane, sequentially over the blocks,
// add the contribution and scramble; (3) the tail stripes and the merge.
// Written from the XXH3 specification (xxhash's doc/xxhash_spec.md); the
// 192-byte default secret is read from libxxhash's header on the host
// (xxh3_secret.cc). tests/engine/gpu runs these steps on the host against
// XXH3_64bits.

#include <cstdint>

#include "engine/gpu/hd.h"

namespace tide::gpu::xxh3 {

inline constexpr uint64_t kP32_1 = 0x9E3779B1u;
inline constexpr uint64_t kP32_2 = 0x85EBCA77u;
inline constexpr uint64_t kP32_3 = 0xC2B2AE3Du;
inline constexpr uint64_t kP64_1 = 0x9E3779B185EBCA87ull;
inline constexpr uint64_t kP64_2 = 0xC2B2AE3D27D4EB4Full;
inline constexpr uint64_t kP64_3 = 0x165667B19E3779F9ull;
inline constexpr uint64_t kP64_4 = 0x85EBCA77C2B2AE63ull;
inline constexpr uint64_t kP64_5 = 0x27D4EB2F165667C5ull;
inline constexpr int kSecretSize = 192;
inline constexpr int kStripe = 64;
inline constexpr int kStripesPerBlock = (kSecretSize - kStripe) / 8;  // 16
inline constexpr uint64_t kBlock = kStripe * kStripesPerBlock;        // 1024 bytes
inline constexpr uint64_t kMinLong = 241;                             // shorter: other paths

TIDE_HD inline uint64_t read64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];  // little-endian, any alignment
  return v;
}

TIDE_HD inline uint64_t initLane(int i) {
  const uint64_t init[8] = {kP32_3, kP64_1, kP64_2, kP64_3, kP64_4, kP32_2, kP64_5, kP32_1};
  return init[i];
}

// What stripe `p` (64 bytes) adds to lane i with secret `s`: the input word
// of lane i^1, plus lo32 * hi32 of lane i's word xor its key.
TIDE_HD inline uint64_t stripeTerm(const uint8_t* p, const uint8_t* s, int i) {
  const uint64_t other = read64(p + 8 * (i ^ 1));
  const uint64_t mine = read64(p + 8 * i) ^ read64(s + 8 * i);
  return other + (mine & 0xffffffffull) * (mine >> 32);
}

// Sum of the terms block `b` adds to lane i (16 stripes, secret advancing 8 bytes each).
TIDE_HD inline uint64_t blockContribution(const uint8_t* input, uint64_t b, const uint8_t* secret,
                                          int i) {
  const uint8_t* blk = input + b * kBlock;
  uint64_t sum = 0;
  for (int n = 0; n < kStripesPerBlock; ++n)
    sum += stripeTerm(blk + n * kStripe, secret + 8 * n, i);
  return sum;
}

TIDE_HD inline uint64_t scramble(uint64_t acc, const uint8_t* secret, int i) {
  acc ^= acc >> 47;
  acc ^= read64(secret + kSecretSize - kStripe + 8 * i);
  return acc * kP32_1;
}

// Number of whole blocks the loop scrambles after (the last block, even when
// whole, is handled as the tail).
TIDE_HD inline uint64_t fullBlocks(uint64_t len) {
  return (len - 1) / kBlock;
}

// Lane i's terms from the tail: the stripes of the last, partial block and
// the input's last 64 bytes (with the secret offset by 7 bytes from its end).
TIDE_HD inline uint64_t tailContribution(const uint8_t* input, uint64_t len, const uint8_t* secret,
                                         int i) {
  const uint64_t nb = fullBlocks(len);
  const uint64_t stripes = ((len - 1) - kBlock * nb) / kStripe;
  const uint8_t* last = input + nb * kBlock;
  uint64_t sum = 0;
  for (uint64_t n = 0; n < stripes; ++n) sum += stripeTerm(last + n * kStripe, secret + 8 * n, i);
  sum += stripeTerm(input + len - kStripe, secret + kSecretSize - kStripe - 7, i);
  return sum;
}

TIDE_HD inline uint64_t mul128Fold64(uint64_t a, uint64_t b) {
#if defined(__CUDA_ARCH__)
  return (a * b) ^ __umul64hi(a, b);
#else
  const unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
  return static_cast<uint64_t>(p) ^ static_cast<uint64_t>(p >> 64);
#endif
}

TIDE_HD inline uint64_t avalanche(uint64_t h) {
  h ^= h >> 37;
  h *= 0x165667919E3779F9ull;
  return h ^ (h >> 32);
}

// The final hash from the 8 lanes.
TIDE_HD inline uint64_t merge(const uint64_t acc[8], uint64_t len, const uint8_t* secret) {
  uint64_t r = len * kP64_1;
  const uint8_t* s = secret + 11;
  for (int k = 0; k < 4; ++k) {
    r += mul128Fold64(acc[2 * k] ^ read64(s + 16 * k), acc[2 * k + 1] ^ read64(s + 16 * k + 8));
  }
  return avalanche(r);
}

}  // namespace tide::gpu::xxh3
