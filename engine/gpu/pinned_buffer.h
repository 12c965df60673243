#pragma once
// Page-locked host memory from cudaHostAlloc (the staging replica a D2H copy
// lands in at full PCIe/NVLink-C2C rate), freed on destruction.

#include <cstddef>
#include <cstdint>

#include "engine/core/status.h"

namespace tide::gpu {

class PinnedBuffer {
 public:
  static Result<PinnedBuffer> allocate(size_t bytes);
  PinnedBuffer() = default;
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& o) noexcept { *this = static_cast<PinnedBuffer&&>(o); }
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  uint8_t* data() const { return p_; }
  size_t size() const { return n_; }

 private:
  uint8_t* p_ = nullptr;
  size_t n_ = 0;
};

}  // namespace tide::gpu
