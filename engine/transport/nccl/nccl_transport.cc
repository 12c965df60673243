#include "engine/transport/nccl/nccl_transport.h"

#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "engine/core/parse.h"
#include "engine/transport/nccl/nccl_handles.h"

namespace tide::transport::nccl {

namespace {

constexpr const char* kOneSided =
    "nccl is two-sided: one-sided WRITE/READ are not available; use broadcast() "
    "(the executor's broadcast stage) or another backend";

class NcclTransportImpl final : public NcclTransport {
 public:
  NcclTransportImpl(const TransportConfig& c, int device) : config_(c), device_(device) {}

  Status init() {
    TIDE_RETURN_IF_ERROR(gpu::cudaCheck(cudaSetDevice(device_), "cudaSetDevice"));
    TIDE_ASSIGN_OR_RETURN(stream_, gpu::Stream::create());
    TIDE_ASSIGN_OR_RETURN(comm_, initComm(config_, "nccl/unique_id", "nccl"));
    return Status::ok();
  }

  Capabilities capabilities() const override {
    Capabilities c;
    c.backend = "nccl";
    c.oneSided = false;
    c.read = false;
    c.writeWithImm = false;
    c.crossHost = true;
    c.deviceMemory = true;
    return c;
  }
  int rank() const override { return config_.rank; }
  int worldSize() const override { return config_.worldSize; }
  int device() const override { return device_; }

  Result<LocalRegion> registerRegion(void* addr, uint64_t size, MemoryKind kind) override {
    if (kind != MemoryKind::kCuda) {
      return TIDE_ERROR(Code::kInvalidArgument,
                        "nccl: only CUDA device memory can be registered (MemoryKind::kCuda)");
    }
    if (!addr || size == 0) return TIDE_ERROR(Code::kInvalidArgument, "nccl: empty region");
    std::lock_guard lock(mu_);
    LocalRegion r;
    r.id = nextId_++;
    r.addr = addr;
    r.size = size;
    r.kind = kind;
    r.descriptor.rank = config_.rank;
    r.descriptor.id = r.id;
    r.descriptor.size = size;
    regions_[r.id] = r;
    return r;
  }
  Status deregisterRegion(uint32_t id) override {
    std::lock_guard lock(mu_);
    if (regions_.erase(id) == 0) {
      return TIDE_ERROR(Code::kNotFound, "nccl: region " + std::to_string(id) + " not registered");
    }
    return Status::ok();
  }
  Status importRegion(const RemoteRegion& remote) override {
    if (remote.rank < 0 || remote.rank >= config_.worldSize) {
      return TIDE_ERROR(Code::kInvalidArgument, "nccl: region of unknown rank");
    }
    return Status::ok();  // nothing to map: collectives name local buffers only
  }
  Result<BatchId> submit(std::span<const Request>) override {
    return TIDE_ERROR(Code::kUnimplemented, kOneSided);
  }
  Result<bool> test(BatchId) override { return TIDE_ERROR(Code::kUnimplemented, kOneSided); }
  Status wait(BatchId, double) override { return TIDE_ERROR(Code::kUnimplemented, kOneSided); }
  Result<Notification> waitNotification(double) override {
    return TIDE_ERROR(Code::kUnimplemented, "nccl: no WRITE_WITH_IMM notifications");
  }

  Status send(int peer, uint32_t tag, std::span<const uint8_t> bytes) override {
    TIDE_RETURN_IF_ERROR(checkPeer(peer));
    const std::string base = channel(config_.rank, peer, tag);
    TIDE_ASSIGN_OR_RETURN(int64_t seq, config_.store->add(base + "/n", 1));
    return config_.store->set(
        base + "/" + std::to_string(seq),
        std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  }
  Result<std::vector<uint8_t>> recv(int peer, uint32_t tag, double timeoutSeconds) override {
    TIDE_RETURN_IF_ERROR(checkPeer(peer));
    const std::string base = channel(peer, config_.rank, tag);
    int64_t seq;
    {
      std::lock_guard lock(mu_);
      seq = ++received_[base];
    }
    auto v = config_.store->get(base + "/" + std::to_string(seq), timeoutSeconds);
    if (!v.isOk()) {
      std::lock_guard lock(mu_);
      --received_[base];  // the message may still come; a retry waits for it
      return v.status();
    }
    return std::vector<uint8_t>(v->begin(), v->end());
  }

  Status broadcast(uint32_t region, uint64_t offset, uint64_t bytes, int root) override {
    if (root < 0 || root >= config_.worldSize) {
      return TIDE_ERROR(Code::kInvalidArgument, "nccl: broadcast root out of range");
    }
    void* addr = nullptr;
    {
      std::lock_guard lock(mu_);
      auto it = regions_.find(region);
      if (it == regions_.end()) {
        return TIDE_ERROR(Code::kNotFound,
                          "nccl: region " + std::to_string(region) + " not registered");
      }
      if (offset > it->second.size || bytes > it->second.size - offset) {
        return TIDE_ERROR(Code::kOutOfRange, "nccl: broadcast outside the region");
      }
      addr = static_cast<uint8_t*>(it->second.addr) + offset;
    }
    TIDE_RETURN_IF_ERROR(gpu::cudaCheck(cudaSetDevice(device_), "cudaSetDevice"));
    TIDE_RETURN_IF_ERROR(
        ncclStatus(ncclBroadcast(addr, addr, bytes, ncclUint8, root, comm_.get(), stream_.get()),
                   "ncclBroadcast"));
    return gpu::cudaCheck(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize");
  }

 private:
  Status checkPeer(int peer) const {
    if (peer < 0 || peer >= config_.worldSize || peer == config_.rank) {
      return TIDE_ERROR(Code::kInvalidArgument, "nccl: bad peer " + std::to_string(peer));
    }
    return Status::ok();
  }
  static std::string channel(int from, int to, uint32_t tag) {
    return "nccl/ctl/" + std::to_string(from) + "-" + std::to_string(to) + "/" +
           std::to_string(tag);
  }

  TransportConfig config_;
  int device_;
  gpu::Stream stream_;  // destroyed after comm_ (declared before it)
  Comm comm_;
  std::mutex mu_;
  uint32_t nextId_ = 1;
  std::map<uint32_t, LocalRegion> regions_;
  std::map<std::string, int64_t> received_;
};

}  // namespace

Result<std::unique_ptr<Transport>> createNcclTransport(const TransportConfig& config) {
  TIDE_ASSIGN_OR_RETURN(const int device, chooseDevice(config, "nccl"));
  auto t = std::make_unique<NcclTransportImpl>(config, device);
  TIDE_RETURN_IF_ERROR(t->init());
  return std::unique_ptr<Transport>(std::move(t));
}

}  // namespace tide::transport::nccl
