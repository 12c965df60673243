#pragma once
// The synthetic-weight generator on the GPU: fills a tensor box of any
// version into device memory with the same bf16 bits as
// SyntheticWeights::fillBox writes on the host (fill_math.h says why they
// match), so device-memory shards start and are verified without a host
// round trip.

#include <cstdint>

#include "engine/core/status.h"
#include "engine/gpu/device_buffer.h"
#include "engine/gpu/stream.h"
#include "workloads/weights.h"

namespace tide::gpu {

class DeviceGenerator {
 public:
  // Uploads the normal table to the current device. `w` must outlive this.
  static Result<DeviceGenerator> create(const workloads::SyntheticWeights& w);

  // Writes box.volume() bf16 elements of `tensor` at `version`, row-major
  // within the box, at device address `out`; enqueued on `stream` and
  // finished before returning.
  [[nodiscard]] Status fillBox(uint32_t tensor, const workloads::Box& box, int version,
                               uint16_t* out, const Stream& stream) const;

 private:
  explicit DeviceGenerator(const workloads::SyntheticWeights& w) : w_(&w) {}
  const workloads::SyntheticWeights* w_;
  DeviceBuffer table_;
};

}  // namespace tide::gpu
