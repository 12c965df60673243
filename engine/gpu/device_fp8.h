#pragma once
// Block-scaled FP8 (e4m3) quantization on the GPU, bit-exact with tide's CPU
// reference (sync::quantizeBf16ToE4m3, which exec::quantizeBlocks applies
// block by block): same bytes, same fp32 scales, same layout.

#include <cstdint>

#include "engine/core/status.h"
#include "engine/gpu/stream.h"

namespace tide::gpu {

// src: rows x cols bf16 (device); dst: rows x cols bytes; scales:
// ceil(rows/block) * ceil(cols/block) floats. block in 1..256 (64 and 128
// are the checkpoint formats). Enqueued on `stream`; not synchronized.
[[nodiscard]] Status quantizeE4m3OnDevice(const uint16_t* src, int64_t rows, int64_t cols,
                                          int block, uint8_t* dst, float* scales,
                                          const Stream& stream);

}  // namespace tide::gpu
