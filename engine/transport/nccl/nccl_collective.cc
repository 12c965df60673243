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
    TIDE_RETURN_IF_ERROR(gpu::cudaCheck(cudaSetDevice(device_), "cudaSetDevice"));
    TIDE_ASSIGN_OR_RETURN(stream_, gpu::Stream::create());
    TIDE_ASSIGN_OR_RETURN(comm_, initComm(config_, kIdKey, "nccl collective"));
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
    TIDE_RETURN_IF_ERROR(gpu::cudaCheck(cudaSetDevice(device_), "cudaSetDevice"));
    TIDE_RETURN_IF_ERROR(
        ncclStatus(ncclBroadcast(data, data, bytes, ncclUint8, root, comm_.get(), stream_.get()),
                   "ncclBroadcast"));
    return gpu::cudaCheck(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize");
  }

 private:
  TransportConfig config_;
  int device_;
  gpu::Stream stream_;  // destroyed after comm_ (declared before it)
  Comm comm_;
};

}  // namespace

Result<std::unique_ptr<Collective>> createNcclCollective(const TransportConfig& config) {
  TIDE_ASSIGN_OR_RETURN(const int device, chooseDevice(config, "nccl collective"));
  auto c = std::make_unique<NcclCollective>(config, device);
  TIDE_RETURN_IF_ERROR(c->init());
  return std::unique_ptr<Collective>(std::move(c));
}

}  // namespace tide::transport::nccl
