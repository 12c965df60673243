#include "engine/transport/nccl/nccl_handles.h"

#include <string>

namespace tide::transport::nccl {

Status cudaStatus(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Status::ok();
  return TIDE_ERROR(Code::kInternal, std::string(what) + ": " + cudaGetErrorString(e));
}

Status ncclStatus(ncclResult_t r, const char* what) {
  if (r == ncclSuccess) return Status::ok();
  return TIDE_ERROR(Code::kInternal, std::string(what) + ": " + ncclGetErrorString(r));
}

int cudaDeviceCount() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return n;
}

Comm::~Comm() {
  if (comm_) (void)ncclCommDestroy(comm_);
}

Comm& Comm::operator=(Comm&& o) noexcept {
  if (this != &o) {
    if (comm_) (void)ncclCommDestroy(comm_);
    comm_ = o.comm_;
    o.comm_ = nullptr;
  }
  return *this;
}

Result<Stream> Stream::create() {
  Stream s;
  TIDE_RETURN_IF_ERROR(
      cudaStatus(cudaStreamCreateWithFlags(&s.s_, cudaStreamNonBlocking), "cudaStreamCreate"));
  return s;
}

Stream::~Stream() {
  if (s_) (void)cudaStreamDestroy(s_);
}

Stream& Stream::operator=(Stream&& o) noexcept {
  if (this != &o) {
    if (s_) (void)cudaStreamDestroy(s_);
    s_ = o.s_;
    o.s_ = nullptr;
  }
  return *this;
}

Result<DeviceBuffer> DeviceBuffer::allocate(size_t bytes) {
  DeviceBuffer b;
  TIDE_RETURN_IF_ERROR(cudaStatus(cudaMalloc(&b.p_, bytes), "cudaMalloc"));
  b.n_ = bytes;
  return b;
}

DeviceBuffer::~DeviceBuffer() {
  if (p_) (void)cudaFree(p_);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (p_) (void)cudaFree(p_);
    p_ = o.p_;
    n_ = o.n_;
    o.p_ = nullptr;
  }
  return *this;
}

}  // namespace tide::transport::nccl
