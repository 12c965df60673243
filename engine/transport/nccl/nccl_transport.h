#pragma once
// nccl backend: NCCL collectives on CUDA device memory. NCCL is two-sided, so
// capabilities().oneSided is false and submit() answers kUnimplemented with
// the reason; what maps honestly is:
//   * registerRegion of MemoryKind::kCuda memory (host memory is refused);
//   * NcclTransport::broadcast(region, offset, bytes, root): an in-place
//     ncclBroadcast of a registered range over all ranks — the executor's
//     broadcast stage uses it through dynamic_cast when the backend is nccl;
//   * send()/recv() control messages, carried by the rendezvous store.
// The ncclUniqueId is created by rank 0 and exchanged through the store.
// Each rank uses CUDA device (rank mod device count), or options["device"].
// Creation fails with "no CUDA device" where none exists.

#include <cstdint>
#include <memory>

#include "engine/transport/registry.h"
#include "engine/transport/transport.h"

namespace tide::transport::nccl {

class NcclTransport : public Transport {
 public:
  // Broadcasts [offset, offset+bytes) of the local region `region` from rank
  // `root` to the same range of every rank's region (every rank calls it
  // with its own region id), then waits for the stream.
  [[nodiscard]] virtual Status broadcast(uint32_t region, uint64_t offset, uint64_t bytes,
                                         int root) = 0;
  // CUDA device this rank uses.
  virtual int device() const = 0;
};

Result<std::unique_ptr<Transport>> createNcclTransport(const TransportConfig& config);

}  // namespace tide::transport::nccl
