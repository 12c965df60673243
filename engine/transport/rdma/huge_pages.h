#pragma once
// Host buffers for registration. Huge pages cut the page entries an RDMA
// device must pin and map (80 GB of 4 KiB pages is 20 M entries), which is
// most of the registration cost; when they are unavailable the buffer falls
// back to normal pages and says why.

#include <cstdint>
#include <string>

#include "engine/core/fd.h"
#include "engine/core/status.h"

namespace tide::transport::rdma {

struct HostBuffer {
  Mapping mapping;
  bool hugePages = false;
  std::string fallbackReason;  // why huge pages were not used ("" if they were)
  void* data() const { return mapping.data(); }
  uint64_t size() const { return mapping.size(); }
};

// Maps `size` bytes (rounded up to 2 MiB when huge). With wantHuge, tries
// MAP_HUGETLB first, then transparent huge pages (madvise), then plain pages.
Result<HostBuffer> allocateHostBuffer(uint64_t size, bool wantHuge);

}  // namespace tide::transport::rdma
