#include "engine/gpu/device_checksum.h"

#include <xxhash.h>

#include <cstring>
#include <vector>

#include "engine/gpu/cuda_status.h"
#include "engine/gpu/device_buffer.h"
#include "engine/gpu/kernels.h"
#include "engine/gpu/xxh3_math.h"
#include "engine/gpu/xxh3_secret.h"

namespace tide::gpu {

Result<uint64_t> deviceXxh3(const void* device, uint64_t bytes, const Stream& stream) {
  const auto* in = static_cast<const uint8_t*>(device);
  if (bytes < xxh3::kMinLong) {
    std::vector<uint8_t> host(bytes);
    if (bytes > 0) {
      TIDE_RETURN_IF_ERROR(cudaCheck(
          cudaMemcpyAsync(host.data(), in, bytes, cudaMemcpyDeviceToHost, stream.get()), "D2H"));
      TIDE_RETURN_IF_ERROR(stream.synchronize());
    }
    return static_cast<uint64_t>(XXH3_64bits(host.data(), host.size()));
  }
  kernels::Xxh3Secret secret;
  std::memcpy(secret.bytes, xxh3DefaultSecret().data(), sizeof secret.bytes);
  const uint64_t blocks = xxh3::fullBlocks(bytes);
  TIDE_ASSIGN_OR_RETURN(DeviceBuffer scratch, DeviceBuffer::allocate(8 * (8 * blocks + 1)));
  auto* contrib = static_cast<uint64_t*>(scratch.data());
  uint64_t* out = contrib + 8 * blocks;
  TIDE_RETURN_IF_ERROR(
      cudaCheck(kernels::xxh3Blocks(in, blocks, secret, contrib, stream.get()), "xxh3 blocks"));
  TIDE_RETURN_IF_ERROR(
      cudaCheck(kernels::xxh3Finish(in, bytes, contrib, secret, out, stream.get()), "xxh3 finish"));
  uint64_t h = 0;
  TIDE_RETURN_IF_ERROR(cudaCheck(
      cudaMemcpyAsync(&h, out, sizeof h, cudaMemcpyDeviceToHost, stream.get()), "D2H hash"));
  TIDE_RETURN_IF_ERROR(stream.synchronize());
  return h;
}

}  // namespace tide::gpu
