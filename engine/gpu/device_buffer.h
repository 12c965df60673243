#pragma once
// Device memory from cudaMalloc, freed on destruction (on the device it was
// allocated on).

#include <cstddef>
#include <cstdint>

#include "engine/core/status.h"

namespace tide::gpu {

class DeviceBuffer {
 public:
  // `bytes` on the current device; 0 bytes gives an empty buffer.
  static Result<DeviceBuffer> allocate(size_t bytes);
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = static_cast<DeviceBuffer&&>(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const { return p_; }
  uint8_t* bytes() const { return static_cast<uint8_t*>(p_); }
  size_t size() const { return n_; }
  int device() const { return device_; }

 private:
  void reset() noexcept;
  void* p_ = nullptr;
  size_t n_ = 0;
  int device_ = 0;
};

}  // namespace tide::gpu
