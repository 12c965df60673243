// tide's GPU kernels: the generator's fill, the XXH3 checksum in two
// passes, block-scaled FP8 quantization, and an empty kernel. One file so
// nvcc runs once.

#include "engine/gpu/fp8_math.h"
#include "engine/gpu/kernels.h"
#include "engine/gpu/xxh3_math.h"

namespace tide::gpu::kernels {
namespace {

constexpr int kThreads = 256;

unsigned gridFor(uint64_t n) {
  const uint64_t g = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(g < 65535ull * 16 ? (g == 0 ? 1 : g) : 65535ull * 16);
}

__global__ void fillKernel(FillParams p, BoxGeom g, uint64_t n, uint16_t* out) {
  const uint64_t step = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t j = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < n;
       j += step) {
    out[j] = fillElement(p, boxElementFlat(g, j));
  }
}

// One thread per (block, lane).
__global__ void xxh3BlocksKernel(const uint8_t* input, uint64_t blocks, Xxh3Secret secret,
                                 uint64_t* contrib) {
  const uint64_t step = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t t = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < 8 * blocks;
       t += step) {
    contrib[t] = xxh3::blockContribution(input, t / 8, secret.bytes, static_cast<int>(t % 8));
  }
}

// Eight threads, one per lane: the sequential scramble chain, the tail, the merge.
__global__ void xxh3FinishKernel(const uint8_t* input, uint64_t len, const uint64_t* contrib,
                                 Xxh3Secret secret, uint64_t* out) {
  __shared__ uint64_t acc[8];
  const int i = static_cast<int>(threadIdx.x);
  if (i < 8) {
    uint64_t a = xxh3::initLane(i);
    const uint64_t nb = xxh3::fullBlocks(len);
    for (uint64_t b = 0; b < nb; ++b) a = xxh3::scramble(a + contrib[8 * b + i], secret.bytes, i);
    acc[i] = a + xxh3::tailContribution(input, len, secret.bytes, i);
  }
  __syncthreads();
  if (i == 0) *out = xxh3::merge(acc, len, secret.bytes);
}

// One CUDA block per FP8 block: the max |x| over the tile (NaN excluded, as
// the reference's comparison excludes it; max is exact in any order), the
// scale, then every element.
__global__ void quantizeKernel(const uint16_t* src, int64_t rows, int64_t cols, int block,
                               uint8_t* dst, float* scales) {
  __shared__ float part[kThreads];
  const int64_t blockCols = (cols + block - 1) / block;
  const int64_t br = blockIdx.x / blockCols, bc = blockIdx.x % blockCols;
  const int64_t r0 = br * block, c0 = bc * block;
  const int64_t h = min(static_cast<int64_t>(block), rows - r0);
  const int64_t w = min(static_cast<int64_t>(block), cols - c0);
  float amax = 0.0f;
  for (int64_t k = threadIdx.x; k < h * w; k += blockDim.x) {
    const float a = absBf16(src[(r0 + k / w) * cols + c0 + k % w]);
    if (a > amax) amax = a;
  }
  part[threadIdx.x] = amax;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (static_cast<int>(threadIdx.x) < s && part[threadIdx.x + s] > part[threadIdx.x]) {
      part[threadIdx.x] = part[threadIdx.x + s];
    }
    __syncthreads();
  }
  const float scale = e4m3Scale(part[0]);
  if (threadIdx.x == 0) scales[blockIdx.x] = scale;
  for (int64_t k = threadIdx.x; k < h * w; k += blockDim.x) {
    const int64_t at = (r0 + k / w) * cols + c0 + k % w;
    dst[at] = quantizeBf16(src[at], scale);
  }
}

__global__ void emptyKernel() {}

}  // namespace

cudaError_t fill(const FillParams& p, const BoxGeom& g, uint64_t n, uint16_t* out,
                 cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  fillKernel<<<gridFor(n), kThreads, 0, stream>>>(p, g, n, out);
  return cudaGetLastError();
}

cudaError_t xxh3Blocks(const uint8_t* input, uint64_t blocks, const Xxh3Secret& secret,
                       uint64_t* contrib, cudaStream_t stream) {
  if (blocks == 0) return cudaSuccess;
  xxh3BlocksKernel<<<gridFor(8 * blocks), kThreads, 0, stream>>>(input, blocks, secret, contrib);
  return cudaGetLastError();
}

cudaError_t xxh3Finish(const uint8_t* input, uint64_t len, const uint64_t* contrib,
                       const Xxh3Secret& secret, uint64_t* out, cudaStream_t stream) {
  xxh3FinishKernel<<<1, 32, 0, stream>>>(input, len, contrib, secret, out);
  return cudaGetLastError();
}

cudaError_t quantizeE4m3(const uint16_t* src, int64_t rows, int64_t cols, int block, uint8_t* dst,
                         float* scales, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  const int64_t tiles = ((rows + block - 1) / block) * ((cols + block - 1) / block);
  if (block <= 0 || block > 256 || tiles > 0x7fffffff) return cudaErrorInvalidValue;
  quantizeKernel<<<static_cast<unsigned>(tiles), kThreads, 0, stream>>>(src, rows, cols, block, dst,
                                                                        scales);
  return cudaGetLastError();
}

cudaError_t empty(cudaStream_t stream) {
  emptyKernel<<<1, 1, 0, stream>>>();
  return cudaGetLastError();
}

}  // namespace tide::gpu::kernels
