#pragma once
// Launchers of tide's GPU kernels (kernels.cu, the only file nvcc compiles).
// Each enqueues on `stream` and returns the launch error; the caller
// synchronizes. The element math is in fill_math.h, fp8_math.h and
// xxh3_math.h, shared with the host.

#include <cuda_runtime_api.h>

#include <cstdint>

#include "engine/gpu/fill_math.h"

namespace tide::gpu::kernels {

struct Xxh3Secret {
  uint8_t bytes[192];
};

// out[j] = fillElement(p, boxElementFlat(g, j)) for j < n (bf16 bits).
cudaError_t fill(const FillParams& p, const BoxGeom& g, uint64_t n, uint16_t* out,
                 cudaStream_t stream);

// contrib[8 * b + i] = xxh3::blockContribution(input, b, secret, i) for b < blocks.
cudaError_t xxh3Blocks(const uint8_t* input, uint64_t blocks, const Xxh3Secret& secret,
                       uint64_t* contrib, cudaStream_t stream);
// *out = XXH3-64 of input[0, len) (len > 240) from the block contributions.
cudaError_t xxh3Finish(const uint8_t* input, uint64_t len, const uint64_t* contrib,
                       const Xxh3Secret& secret, uint64_t* out, cudaStream_t stream);

// Block-scaled e4m3 of a row-major rows x cols bf16 matrix: dst (rows x cols
// bytes) and scales (row-major over the ceil(rows/block) x ceil(cols/block)
// grid), as sync::quantizeBf16ToE4m3 lays them out. block <= 256.
cudaError_t quantizeE4m3(const uint16_t* src, int64_t rows, int64_t cols, int block, uint8_t* dst,
                         float* scales, cudaStream_t stream);

// An empty kernel: launch overhead.
cudaError_t empty(cudaStream_t stream);

}  // namespace tide::gpu::kernels
