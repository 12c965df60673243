// xxh3-64 built for AVX2 (this file alone is compiled with -mavx2; it is only
// called after a runtime check). The shared library is built for the x86-64
// baseline (SSE2): on AVX2 hosts this inline build hashes about twice as fast,
// and xxh3 gives the same value for every vector width.
#define XXH_INLINE_ALL
#include "engine/data/xxh3_avx2.h"

#include <xxhash.h>

namespace tide::data {

uint64_t xxh3Avx2(const void* data, size_t length) {
  return XXH3_64bits(data, length);
}

}  // namespace tide::data
