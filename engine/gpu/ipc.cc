#include "engine/gpu/ipc.h"

#include <cuda_runtime_api.h>

#include <cstring>

#include "engine/core/parse.h"
#include "engine/gpu/cuda_status.h"

namespace tide::gpu {

static_assert(sizeof(cudaIpcMemHandle_t) == sizeof(IpcHandle::bytes));

std::string IpcHandle::toText() const {
  static const char* kHex = "0123456789abcdef";
  std::string s;
  for (uint8_t b : bytes) {
    s += kHex[b >> 4];
    s += kHex[b & 15];
  }
  return s + ":" + std::to_string(size);
}

Result<IpcHandle> IpcHandle::fromText(std::string_view text) {
  const size_t colon = text.find(':');
  IpcHandle h;
  auto bad = [&] {
    return TIDE_ERROR(
        Code::kInvalidArgument,
        "cuda ipc handle: want 128 hex digits ':' size, got '" + std::string(text) + "'");
  };
  if (colon != 2 * h.bytes.size()) return bad();
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  for (size_t i = 0; i < h.bytes.size(); ++i) {
    const int hi = nibble(text[2 * i]), lo = nibble(text[2 * i + 1]);
    if (hi < 0 || lo < 0) return bad();
    h.bytes[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  auto size = parseUnsigned(std::string(text.substr(colon + 1)), "cuda ipc handle size");
  if (!size.isOk() || *size == 0) return bad();
  h.size = *size;
  return h;
}

Result<IpcHandle> exportIpc(const DeviceBuffer& buffer) {
  if (!buffer.data()) return TIDE_ERROR(Code::kInvalidArgument, "cuda ipc: empty buffer");
  cudaIpcMemHandle_t raw;
  TIDE_RETURN_IF_ERROR(cudaCheck(cudaIpcGetMemHandle(&raw, buffer.data()), "cudaIpcGetMemHandle"));
  IpcHandle h;
  std::memcpy(h.bytes.data(), &raw, sizeof raw);
  h.size = buffer.size();
  return h;
}

Result<IpcMapping> IpcMapping::open(const IpcHandle& handle) {
  cudaIpcMemHandle_t raw;
  std::memcpy(&raw, handle.bytes.data(), sizeof raw);
  IpcMapping m;
  TIDE_RETURN_IF_ERROR(cudaCheck(cudaIpcOpenMemHandle(&m.p_, raw, cudaIpcMemLazyEnablePeerAccess),
                                 "cudaIpcOpenMemHandle"));
  m.n_ = handle.size;
  return m;
}

IpcMapping::~IpcMapping() {
  if (p_) (void)cudaIpcCloseMemHandle(p_);
}

IpcMapping& IpcMapping::operator=(IpcMapping&& o) noexcept {
  if (this != &o) {
    if (p_) (void)cudaIpcCloseMemHandle(p_);
    p_ = o.p_;
    n_ = o.n_;
    o.p_ = nullptr;
    o.n_ = 0;
  }
  return *this;
}

}  // namespace tide::gpu
