#include "engine/gpu/xxh3_secret.h"

#include <cstring>

// The header's implementation, private to this file, for its XXH3_kSecret.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace tide::gpu {

const std::array<uint8_t, 192>& xxh3DefaultSecret() {
  static_assert(sizeof(XXH3_kSecret) == 192);
  static const std::array<uint8_t, 192> secret = [] {
    std::array<uint8_t, 192> s{};
    std::memcpy(s.data(), XXH3_kSecret, s.size());
    return s;
  }();
  return secret;
}

}  // namespace tide::gpu
