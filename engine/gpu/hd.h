#pragma once
// Marks functions compiled for both the host and the GPU. The per-element
// math of the GPU kernels lives in headers made of such functions, so the
// very code the kernels run is also compiled by the host compiler and tested
// against tide's CPU reference on any machine, GPU or not.

#include <cstdint>

#if defined(__CUDACC__)
#define TIDE_HD __host__ __device__
#else
#define TIDE_HD
#endif

namespace tide::gpu {

TIDE_HD inline uint32_t floatBits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  __builtin_memcpy(&u, &f, 4);
  return u;
#endif
}

TIDE_HD inline float bitsFloat(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
#endif
}

}  // namespace tide::gpu
