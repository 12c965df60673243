#pragma once
// cudaHostRegister of existing host memory (an executor's buffer, a shared
// memory segment): page-locks it so DMA copies reach full rate, and
// unregisters on destruction. The memory must outlive the registration.

#include <cstddef>

#include "engine/core/status.h"

namespace tide::gpu {

class HostRegistration {
 public:
  static Result<HostRegistration> create(void* addr, size_t bytes);
  HostRegistration() = default;
  ~HostRegistration();
  HostRegistration(HostRegistration&& o) noexcept { *this = static_cast<HostRegistration&&>(o); }
  HostRegistration& operator=(HostRegistration&& o) noexcept;
  HostRegistration(const HostRegistration&) = delete;
  HostRegistration& operator=(const HostRegistration&) = delete;

  void* addr() const { return addr_; }
  size_t size() const { return n_; }

 private:
  void* addr_ = nullptr;
  size_t n_ = 0;
};

}  // namespace tide::gpu
