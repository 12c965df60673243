#include "engine/gpu/pinned_buffer.h"

#include <cuda_runtime_api.h>

#include "engine/gpu/cuda_status.h"

namespace tide::gpu {

Result<PinnedBuffer> PinnedBuffer::allocate(size_t bytes) {
  PinnedBuffer b;
  if (bytes == 0) return b;
  void* p = nullptr;
  TIDE_RETURN_IF_ERROR(cudaCheck(cudaHostAlloc(&p, bytes, cudaHostAllocPortable), "cudaHostAlloc"));
  b.p_ = static_cast<uint8_t*>(p);
  b.n_ = bytes;
  return b;
}

PinnedBuffer::~PinnedBuffer() {
  if (p_) (void)cudaFreeHost(p_);
}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& o) noexcept {
  if (this != &o) {
    if (p_) (void)cudaFreeHost(p_);
    p_ = o.p_;
    n_ = o.n_;
    o.p_ = nullptr;
    o.n_ = 0;
  }
  return *this;
}

}  // namespace tide::gpu
