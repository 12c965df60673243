#pragma once
// XXH3-64 of device memory, equal to XXH3_64bits of the same bytes on the
// host (the checksum tide's verification compares: boxChecksum,
// expectedChecksum). Inputs over 240 bytes are hashed on the GPU in two
// passes (xxh3_math.h); shorter ones are copied to the host and hashed there
// (a few hundred bytes: a launch would cost more).

#include <cstdint>

#include "engine/core/status.h"
#include "engine/gpu/stream.h"

namespace tide::gpu {

Result<uint64_t> deviceXxh3(const void* device, uint64_t bytes, const Stream& stream);

}  // namespace tide::gpu
