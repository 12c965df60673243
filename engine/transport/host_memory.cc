#include "engine/transport/host_memory.h"

#include <sys/mman.h>

#include <algorithm>

#include "engine/core/errno_status.h"
#include "engine/core/units.h"

namespace tide::transport {

Result<HostMemory> HostMemory::anonymous(uint64_t size) {
  // A zero-byte request still gets one page, so data() is never null.
  const uint64_t len = std::max<uint64_t>(size, 1);
  void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return TIDE_ERRNO("mmap " + formatBytes(len) + " of host memory");
  return HostMemory(p, size, [len](void* data, uint64_t) { ::munmap(data, len); });
}

}  // namespace tide::transport
