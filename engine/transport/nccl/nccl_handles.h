#pragma once
// Small owning wrappers for the CUDA and NCCL handles the nccl backend uses
// (a communicator, a stream, device memory). Destructors release and never
// throw; errors become Status with the library's own message.

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>

#include "engine/core/status.h"

namespace tide::transport::nccl {

Status cudaStatus(cudaError_t e, const char* what);
Status ncclStatus(ncclResult_t r, const char* what);

// Number of CUDA devices; 0 (not an error) when there is no driver or device.
int cudaDeviceCount();

class Comm {
 public:
  Comm() = default;
  explicit Comm(ncclComm_t c) : comm_(c) {}
  ~Comm();
  Comm(Comm&& o) noexcept : comm_(o.comm_) { o.comm_ = nullptr; }
  Comm& operator=(Comm&& o) noexcept;
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;
  ncclComm_t get() const { return comm_; }

 private:
  ncclComm_t comm_ = nullptr;
};

class Stream {
 public:
  static Result<Stream> create();
  Stream() = default;
  ~Stream();
  Stream(Stream&& o) noexcept : s_(o.s_) { o.s_ = nullptr; }
  Stream& operator=(Stream&& o) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

class DeviceBuffer {
 public:
  static Result<DeviceBuffer> allocate(size_t bytes);
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* data() const { return p_; }
  size_t size() const { return n_; }

 private:
  void* p_ = nullptr;
  size_t n_ = 0;
};

}  // namespace tide::transport::nccl
