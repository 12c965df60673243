#pragma once
// Collectives on device memory, kept off the one-sided Transport interface:
// NCCL's operations are two-sided and collective (every rank calls them
// together), which Transport's submit/test/wait of one-sided requests cannot
// express. The broadcast strategy's stage maps onto broadcast().

#include <cstdint>

#include "engine/core/status.h"

namespace tide::transport {

class Collective {
 public:
  virtual ~Collective() = default;
  virtual int rank() const = 0;
  virtual int worldSize() const = 0;
  // In-place broadcast of `bytes` at `data` (device memory of this rank's
  // GPU) from rank `root` to every rank; every rank calls it with its own
  // buffer. Returns when this rank's copy has landed.
  [[nodiscard]] virtual Status broadcast(void* data, uint64_t bytes, int root) = 0;
};

}  // namespace tide::transport
