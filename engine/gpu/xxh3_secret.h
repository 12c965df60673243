#pragma once
// XXH3's default 192-byte secret, read from libxxhash's own header (the GPU
// checksum must hash with exactly the secret XXH3_64bits uses).

#include <array>
#include <cstdint>

namespace tide::gpu {

const std::array<uint8_t, 192>& xxh3DefaultSecret();

}  // namespace tide::gpu
