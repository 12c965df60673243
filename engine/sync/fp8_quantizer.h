#pragma once
// BF16 -> FP8 E4M3 (OCP "e4m3fn": bias 7, no infinities, max 448, NaN =
// S.1111.111) with one fp32 scale per 2-D block, as block-quantized FP8
// checkpoints are served. The sender of a weight update runs this when the
// inference side holds FP8 weights.
//
// Per block: amax = max |x| over the block (NaNs ignored);
//            scale = amax / 448 (1 when amax is 0 or not finite);
//            q = e4m3(x / scale), rounded to nearest, ties to even,
//            saturating to +-448; NaN stays NaN (0x7f / 0xff).

#include <cstdint>
#include <span>

#include "engine/core/status.h"

namespace tide::sync {

inline constexpr float kE4m3Max = 448.0f;

// Decodes bf16 bits to float (exact).
float bf16ToFloat(uint16_t bits);
// Rounds a float to bf16 bits (nearest even; NaN stays NaN).
uint16_t floatToBf16(float value);
// Float -> e4m3 bits: nearest, ties to even, saturating; NaN -> 0x7f (sign kept).
uint8_t floatToE4m3(float value);
// e4m3 bits -> float (exact).
float e4m3ToFloat(uint8_t bits);

// Shape of a block-quantized 2-D tensor (1-D tensors use rows = 1).
struct Fp8BlockShape {
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t block = 128;  // square blocks, block x block elements
  int64_t blockRows() const { return (rows + block - 1) / block; }
  int64_t blockCols() const { return (cols + block - 1) / block; }
  int64_t numScales() const { return blockRows() * blockCols(); }
};

// Quantizes row-major bf16 `src` (rows x cols) into `dst` (rows x cols bytes)
// and `scales` (blockRows x blockCols, row-major). Edge blocks are partial.
[[nodiscard]] Status quantizeBf16ToE4m3(std::span<const uint16_t> src, const Fp8BlockShape& shape,
                                        std::span<uint8_t> dst, std::span<float> scales);

}  // namespace tide::sync
