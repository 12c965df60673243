#include "engine/gpu/host_registration.h"

#include <cuda_runtime_api.h>

#include "engine/gpu/cuda_status.h"

namespace tide::gpu {

Result<HostRegistration> HostRegistration::create(void* addr, size_t bytes) {
  if (!addr || bytes == 0) {
    return TIDE_ERROR(Code::kInvalidArgument, "cudaHostRegister: empty range");
  }
  HostRegistration r;
  TIDE_RETURN_IF_ERROR(
      cudaCheck(cudaHostRegister(addr, bytes, cudaHostRegisterPortable), "cudaHostRegister"));
  r.addr_ = addr;
  r.n_ = bytes;
  return r;
}

HostRegistration::~HostRegistration() {
  if (addr_) (void)cudaHostUnregister(addr_);
}

HostRegistration& HostRegistration::operator=(HostRegistration&& o) noexcept {
  if (this != &o) {
    if (addr_) (void)cudaHostUnregister(addr_);
    addr_ = o.addr_;
    n_ = o.n_;
    o.addr_ = nullptr;
    o.n_ = 0;
  }
  return *this;
}

}  // namespace tide::gpu
