#pragma once
// BF16 -> FP8 e4m3 for one element and one block's scale, as the GPU
// quantization kernel runs them: the same integer rounding on the float's
// bits as tide's CPU reference (engine/sync/fp8_quantizer.h, used block by
// block by engine/exec/executor/fp8_blocks.h), so the kernel's bytes and scales are
// bit-exact with it. tests/engine/gpu checks this header against the
// reference on the host.

#include <cstdint>

#include "engine/gpu/hd.h"

namespace tide::gpu {

TIDE_HD inline float bf16Float(uint16_t bits) {
  return bitsFloat(static_cast<uint32_t>(bits) << 16);
}

// |x| of a bf16 value as float, and whether it may set a block's amax (NaN
// may not: the reference's `a > amax` is false for NaN).
TIDE_HD inline float absBf16(uint16_t bits) {
  return bf16Float(static_cast<uint16_t>(bits & 0x7fff));
}

// amax of a block -> its scale: amax / 448, or 1 when amax is 0 or not finite.
TIDE_HD inline float e4m3Scale(float amax) {
  const bool finite = (floatBits(amax) & 0x7f800000u) != 0x7f800000u;
  return (amax > 0.0f && finite) ? amax / 448.0f : 1.0f;
}

// Float -> e4m3 bits: nearest, ties to even, saturating to +-448, NaN ->
// 0x7f with the sign kept.
TIDE_HD inline uint8_t floatToE4m3(float value) {
  const uint32_t bits = floatBits(value);
  const uint8_t sign = static_cast<uint8_t>((bits >> 24) & 0x80);
  const uint32_t exp = (bits >> 23) & 0xff;
  const uint32_t mant = bits & 0x7fffff;
  if (exp == 0xff && mant != 0) return sign | 0x7f;
  if (exp == 0xff) return sign | 0x7e;
  if (exp == 0) return sign;
  const int e = static_cast<int>(exp) - 127;
  const uint32_t full = (1u << 23) | mant;
  uint32_t q;
  if (e >= -6) {
    if (e > 8) return sign | 0x7e;
    const uint32_t kept = mant >> 20;
    const uint32_t rem = mant & ((1u << 20) - 1);
    const uint32_t half = 1u << 19;
    q = (static_cast<uint32_t>(e + 7) << 3) | kept;
    if (rem > half || (rem == half && (q & 1))) ++q;
  } else {
    const int shift = 14 - e;
    if (shift > 25) return sign;
    q = full >> shift;
    const uint32_t rem = full & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) ++q;
  }
  if (q > 0x7e) q = 0x7e;
  return static_cast<uint8_t>(sign | q);
}

TIDE_HD inline uint8_t quantizeBf16(uint16_t bits, float scale) {
  return floatToE4m3(bf16Float(bits) / scale);
}

}  // namespace tide::gpu
