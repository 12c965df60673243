#pragma once
// CUDA IPC: a process exports a device buffer as a 64-byte handle (passed as
// hex text: a command line, a store key), another process on the same GPU
// opens it and reads the exporter's memory in place (the colocated trainer ->
// inference-engine path). The mapping is closed on destruction; the exporter
// must keep its buffer alive while a mapping is open.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/core/status.h"
#include "engine/gpu/device_buffer.h"

namespace tide::gpu {

struct IpcHandle {
  std::array<uint8_t, 64> bytes{};  // cudaIpcMemHandle_t (CUDA_IPC_HANDLE_SIZE)
  uint64_t size = 0;                // bytes exported

  // "<128 hex digits>:<size>"
  std::string toText() const;
  static Result<IpcHandle> fromText(std::string_view text);
};

Result<IpcHandle> exportIpc(const DeviceBuffer& buffer);

class IpcMapping {
 public:
  // Opens the handle on the current device (which must be the exporter's GPU).
  static Result<IpcMapping> open(const IpcHandle& handle);
  IpcMapping() = default;
  ~IpcMapping();
  IpcMapping(IpcMapping&& o) noexcept { *this = static_cast<IpcMapping&&>(o); }
  IpcMapping& operator=(IpcMapping&& o) noexcept;
  IpcMapping(const IpcMapping&) = delete;
  IpcMapping& operator=(const IpcMapping&) = delete;

  void* data() const { return p_; }
  uint64_t size() const { return n_; }

 private:
  void* p_ = nullptr;
  uint64_t n_ = 0;
};

}  // namespace tide::gpu
