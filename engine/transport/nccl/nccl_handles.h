#pragma once
// The NCCL communicator as an owning handle (its destructor releases it and
// never throws), and NCCL errors as Status with the library's message. The
// CUDA side (streams, device memory, errors) is engine/gpu's runtime layer.

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <string>

#include "engine/core/status.h"
#include "engine/gpu/cuda_status.h"
#include "engine/gpu/stream.h"
#include "engine/transport/registry.h"

namespace tide::transport::nccl {

Status ncclStatus(ncclResult_t r, const char* what);

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

// The CUDA device of `config`'s rank: its "device" option, else the rank
// modulo the devices there are. Checks the store and the rank; `who` names
// the caller in errors.
Result<int> chooseDevice(const TransportConfig& config, const std::string& who);

// On the current device: a communicator of `config`'s world, rank 0's
// unique id passed to the others through the store under `key`.
Result<Comm> initComm(const TransportConfig& config, const std::string& key,
                      const std::string& who);

}  // namespace tide::transport::nccl
