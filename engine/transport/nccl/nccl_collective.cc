#include "engine/transport/nccl/nccl_collective.h"

#include <cstring>
#include <string>

#include "engine/core/parse.h"
#include "engine/transport/nccl/nccl_handles.h"

namespace tide::transport::nccl {
namespace {

// Distinct from the transport's key, so a world can hold both.
constexpr const char* kIdKey = "nccl/collective/unique_id";

class NcclCollective final : public Collective {
 public:
  NcclCollective(const TransportConfig& c, int device) : config_(c), device_(device) {}

  Status init() {
    TIDE_RETURN_IF_ERROR(cudaStatus(cudaSetDevice(device_), "cudaSetDevice"));
    TIDE_ASSIGN_OR_RETURN(stream_, Stream::create());
    ncclUniqueId id;
    if (config_.rank == 0) {
      TIDE_RETURN_IF_ERROR(ncclStatus(ncclGetUniqueId(&id), "ncclGetUniqueId"));
      TIDE_RETURN_IF_ERROR(
          config_.store->set(kIdKey, std::string(id.internal, sizeof(id.internal))));
    } else {
      TIDE_ASSIGN_OR_RETURN(std::string v,
                            config_.store->get(kIdKey, config_.connectTimeoutSeconds));
      if (v.size() != sizeof(id.internal)) {
        return TIDE_ERROR(Code::kDataLoss, "nccl collective: malformed unique id in the store");
      }
      std::memcpy(id.internal, v.data(), v.size());
    }
    ncclComm_t comm = nullptr;
    TIDE_RETURN_IF_ERROR(ncclStatus(ncclCommInitRank(&comm, config_.worldSize, id, config_.rank),
                                    "ncclCommInitRank"));
    comm_ = Comm(comm);
    return Status::ok();
  }

  int rank() const override { return config_.rank; }
  int worldSize() const override { return config_.worldSize; }

  Status broadcast(void* data, uint64_t bytes, int root) override {
    if (root < 0 || root >= config_.worldSize) {
      return TIDE_ERROR(Code::kInvalidArgument, "nccl collective: broadcast root " +
                                                    std::to_string(root) + " out of range");
    }
    if (bytes > 0 && !data) {
      return TIDE_ERROR(Code::kInvalidArgument, "nccl collective: null buffer");
    }
    TIDE_RETURN_IF_ERROR(cudaStatus(cudaSetDevice(device_), "cudaSetDevice"));
    TIDE_RETURN_IF_ERROR(
        ncclStatus(ncclBroadcast(data, data, bytes, ncclUint8, root, comm_.get(), stream_.get()),
                   "ncclBroadcast"));
    return cudaStatus(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize");
  }

 private:
  TransportConfig config_;
  int device_;
  Stream stream_;  // destroyed after comm_ (declared before it)
  Comm comm_;
};

}  // namespace

Result<std::unique_ptr<Collective>> createNcclCollective(const TransportConfig& config) {
  if (!config.store) {
    return TIDE_ERROR(Code::kInvalidArgument, "nccl collective: a rendezvous store is needed");
  }
  if (config.worldSize < 1 || config.rank < 0 || config.rank >= config.worldSize) {
    return TIDE_ERROR(Code::kInvalidArgument, "nccl collective: bad rank/world size");
  }
  const int n = cudaDeviceCount();
  if (n == 0) return TIDE_ERROR(Code::kUnavailable, "nccl collective: no CUDA device");
  int device = config.rank % n;
  if (auto it = config.options.find("device"); it != config.options.end()) {
    auto d = parseUnsigned(it->second, "nccl device option");
    if (!d.isOk() || *d >= static_cast<uint64_t>(n)) {
      return TIDE_ERROR(Code::kInvalidArgument, "nccl collective: device " + it->second + " of " +
                                                    std::to_string(n) + " CUDA devices");
    }
    device = static_cast<int>(*d);
  }
  auto c = std::make_unique<NcclCollective>(config, device);
  TIDE_RETURN_IF_ERROR(c->init());
  return std::unique_ptr<Collective>(std::move(c));
}

}  // namespace tide::transport::nccl
