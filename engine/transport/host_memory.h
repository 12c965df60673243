#pragma once
// Host memory handed out by Transport::allocateHost(): page-aligned, owned by
// this object and released (unmapped, closed) when it goes away. Backends may
// back it with something their peers can map (the shm backend uses a memfd),
// so transfers into and out of it are faster than with arbitrary memory.

#include <cstdint>
#include <functional>
#include <utility>

#include "engine/core/status.h"

namespace tide::transport {

class HostMemory {
 public:
  using Release = std::function<void(void* data, uint64_t size)>;

  HostMemory() = default;
  HostMemory(void* data, uint64_t size, Release release)
      : data_(data), size_(size), release_(std::move(release)) {}
  HostMemory(const HostMemory&) = delete;
  HostMemory& operator=(const HostMemory&) = delete;
  HostMemory(HostMemory&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)),
        size_(std::exchange(o.size_, 0)),
        release_(std::exchange(o.release_, nullptr)) {}
  HostMemory& operator=(HostMemory&& o) noexcept {
    if (this != &o) {
      reset();
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
      release_ = std::exchange(o.release_, nullptr);
    }
    return *this;
  }
  ~HostMemory() { reset(); }

  // Private anonymous memory (mmap), the default of allocateHost().
  [[nodiscard]] static Result<HostMemory> anonymous(uint64_t size);

  void* data() const { return data_; }
  uint64_t size() const { return size_; }
  void reset() {
    if (data_ != nullptr && release_) release_(data_, size_);
    data_ = nullptr;
    size_ = 0;
    release_ = nullptr;
  }

 private:
  void* data_ = nullptr;
  uint64_t size_ = 0;
  Release release_;
};

}  // namespace tide::transport
