#include "engine/sync/fp8_quantizer.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <string>

namespace tide::sync {

float bf16ToFloat(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

uint16_t floatToBf16(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  if (std::isnan(value)) return static_cast<uint16_t>((bits >> 16) | 0x40);  // keep it a NaN
  bits += 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

// Integer rounding on the float's bit pattern, so no FPU rounding mode or
// division is involved; the test checks it against a table-driven reference.
uint8_t floatToE4m3(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint8_t sign = static_cast<uint8_t>((bits >> 24) & 0x80);
  const uint32_t exp = (bits >> 23) & 0xff;
  const uint32_t mant = bits & 0x7fffff;
  if (exp == 0xff && mant != 0) return sign | 0x7f;  // NaN
  if (exp == 0xff) return sign | 0x7e;               // +-inf saturates to +-448
  if (exp == 0) return sign;                         // float zero/subnormal: far below 2^-10
  const int e = static_cast<int>(exp) - 127;
  const uint32_t full = (1u << 23) | mant;  // 24-bit significand, value = full * 2^(e-23)
  uint32_t q;
  if (e >= -6) {
    // Normal in e4m3: keep 3 mantissa bits; a carry out of the mantissa
    // correctly bumps the exponent.
    if (e > 8) return sign | 0x7e;
    const uint32_t kept = mant >> 20;
    const uint32_t rem = mant & ((1u << 20) - 1);
    const uint32_t half = 1u << 19;
    q = (static_cast<uint32_t>(e + 7) << 3) | kept;
    if (rem > half || (rem == half && (q & 1))) ++q;
  } else {
    // Subnormal in e4m3: count units of 2^-9.
    const int shift = 14 - e;     // >= 21
    if (shift > 25) return sign;  // below 2^-11: rounds to zero
    q = full >> shift;
    const uint32_t rem = full & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) ++q;
  }
  if (q > 0x7e) q = 0x7e;  // saturate: 0x7f is NaN
  return static_cast<uint8_t>(sign | q);
}

float e4m3ToFloat(uint8_t bits) {
  const bool neg = bits & 0x80;
  const int e = (bits >> 3) & 0xf;
  const int m = bits & 0x7;
  float v;
  if (e == 0xf && m == 0x7) {
    v = std::nanf("");
  } else if (e == 0) {
    v = std::ldexp(static_cast<float>(m), -9);
  } else {
    v = std::ldexp(static_cast<float>(8 + m), e - 10);
  }
  return neg ? -v : v;
}

Status quantizeBf16ToE4m3(std::span<const uint16_t> src, const Fp8BlockShape& shape,
                          std::span<uint8_t> dst, std::span<float> scales) {
  if (shape.rows < 0 || shape.cols < 0 || shape.block <= 0) {
    return TIDE_ERROR(Code::kInvalidArgument, "fp8 quantize: bad shape or block size");
  }
  const auto n = static_cast<size_t>(shape.rows * shape.cols);
  if (src.size() != n || dst.size() != n ||
      scales.size() != static_cast<size_t>(shape.numScales())) {
    return TIDE_ERROR(Code::kInvalidArgument,
                      "fp8 quantize: buffer sizes do not match shape (src " +
                          std::to_string(src.size()) + ", dst " + std::to_string(dst.size()) +
                          ", scales " + std::to_string(scales.size()) + " for " +
                          std::to_string(shape.rows) + "x" + std::to_string(shape.cols) +
                          " block " + std::to_string(shape.block) + ")");
  }
  for (int64_t br = 0; br < shape.blockRows(); ++br) {
    const int64_t r0 = br * shape.block;
    const int64_t r1 = std::min(shape.rows, r0 + shape.block);
    for (int64_t bc = 0; bc < shape.blockCols(); ++bc) {
      const int64_t c0 = bc * shape.block;
      const int64_t c1 = std::min(shape.cols, c0 + shape.block);
      float amax = 0.0f;
      for (int64_t r = r0; r < r1; ++r) {
        const uint16_t* row = src.data() + r * shape.cols;
        for (int64_t c = c0; c < c1; ++c) {
          const float a = std::fabs(bf16ToFloat(row[c]));
          if (a > amax) amax = a;  // false for NaN: NaNs do not set the scale
        }
      }
      const float scale = (amax > 0.0f && std::isfinite(amax)) ? amax / kE4m3Max : 1.0f;
      scales[br * shape.blockCols() + bc] = scale;
      for (int64_t r = r0; r < r1; ++r) {
        const uint16_t* row = src.data() + r * shape.cols;
        uint8_t* out = dst.data() + r * shape.cols;
        for (int64_t c = c0; c < c1; ++c) out[c] = floatToE4m3(bf16ToFloat(row[c]) / scale);
      }
    }
  }
  return Status::ok();
}

}  // namespace tide::sync
