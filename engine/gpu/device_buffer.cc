#include "engine/gpu/device_buffer.h"

#include <cuda_runtime_api.h>

#include "engine/gpu/cuda_status.h"

namespace tide::gpu {

Result<DeviceBuffer> DeviceBuffer::allocate(size_t bytes) {
  DeviceBuffer b;
  if (bytes == 0) return b;
  TIDE_RETURN_IF_ERROR(cudaCheck(cudaGetDevice(&b.device_), "cudaGetDevice"));
  TIDE_RETURN_IF_ERROR(cudaCheck(cudaMalloc(&b.p_, bytes), "cudaMalloc"));
  b.n_ = bytes;
  return b;
}

void DeviceBuffer::reset() noexcept {
  if (!p_) return;
  int current = 0;
  const bool switched = cudaGetDevice(&current) == cudaSuccess && current != device_ &&
                        cudaSetDevice(device_) == cudaSuccess;
  (void)cudaFree(p_);
  if (switched) (void)cudaSetDevice(current);
  p_ = nullptr;
  n_ = 0;
}

DeviceBuffer::~DeviceBuffer() {
  reset();
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    reset();
    p_ = o.p_;
    n_ = o.n_;
    device_ = o.device_;
    o.p_ = nullptr;
    o.n_ = 0;
  }
  return *this;
}

}  // namespace tide::gpu
