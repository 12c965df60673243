#include "engine/transport/nccl/nccl_handles.h"

#include <cstring>
#include <string>

#include "engine/core/parse.h"

namespace tide::transport::nccl {

Status ncclStatus(ncclResult_t r, const char* what) {
  if (r == ncclSuccess) return Status::ok();
  return TIDE_ERROR(Code::kInternal, std::string(what) + ": " + ncclGetErrorString(r));
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

Result<int> chooseDevice(const TransportConfig& config, const std::string& who) {
  if (!config.store) {
    return TIDE_ERROR(Code::kInvalidArgument, who + ": a rendezvous store is needed");
  }
  if (config.worldSize < 1 || config.rank < 0 || config.rank >= config.worldSize) {
    return TIDE_ERROR(Code::kInvalidArgument, who + ": bad rank/world size");
  }
  const int n = gpu::deviceCount();
  if (n == 0) return TIDE_ERROR(Code::kUnavailable, who + ": no CUDA device");
  int device = config.rank % n;
  if (auto it = config.options.find("device"); it != config.options.end()) {
    auto d = parseUnsigned(it->second, "nccl device option");
    if (!d.isOk() || *d >= static_cast<uint64_t>(n)) {
      return TIDE_ERROR(Code::kInvalidArgument, who + ": device " + it->second + " of " +
                                                    std::to_string(n) + " CUDA devices");
    }
    device = static_cast<int>(*d);
  }
  return device;
}

Result<Comm> initComm(const TransportConfig& config, const std::string& key,
                      const std::string& who) {
  ncclUniqueId id;
  static_assert(sizeof(id.internal) == NCCL_UNIQUE_ID_BYTES);
  if (config.rank == 0) {
    TIDE_RETURN_IF_ERROR(ncclStatus(ncclGetUniqueId(&id), "ncclGetUniqueId"));
    TIDE_RETURN_IF_ERROR(config.store->set(key, std::string(id.internal, sizeof(id.internal))));
  } else {
    TIDE_ASSIGN_OR_RETURN(std::string v, config.store->get(key, config.connectTimeoutSeconds));
    if (v.size() != sizeof(id.internal)) {
      return TIDE_ERROR(Code::kDataLoss, who + ": malformed unique id in the store");
    }
    std::memcpy(id.internal, v.data(), v.size());
  }
  ncclComm_t comm = nullptr;
  TIDE_RETURN_IF_ERROR(
      ncclStatus(ncclCommInitRank(&comm, config.worldSize, id, config.rank), "ncclCommInitRank"));
  return Comm(comm);
}

}  // namespace tide::transport::nccl
