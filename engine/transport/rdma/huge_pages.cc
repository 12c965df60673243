#include "engine/transport/rdma/huge_pages.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "engine/core/errno_status.h"

namespace tide::transport::rdma {

Result<HostBuffer> allocateHostBuffer(uint64_t size, bool wantHuge) {
  if (size == 0) return TIDE_ERROR(Code::kInvalidArgument, "empty host buffer");
  constexpr uint64_t kHuge = 2ull << 20;
  HostBuffer b;
  if (wantHuge) {
    uint64_t len = (size + kHuge - 1) / kHuge * kHuge;
    void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_POPULATE, -1, 0);
    if (p != MAP_FAILED) {
      b.mapping = Mapping(p, len);
      b.hugePages = true;
      return b;
    }
    b.fallbackReason = std::string("MAP_HUGETLB: ") + std::strerror(errno) +
                       " (reserve pages in /proc/sys/vm/nr_hugepages)";
  } else {
    b.fallbackReason = "huge pages not requested";
  }
  uint64_t len = wantHuge ? (size + kHuge - 1) / kHuge * kHuge : size;
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return TIDE_ERRNO("mmap(" + std::to_string(len) + " bytes)");
  b.mapping = Mapping(p, len);
  if (wantHuge && madvise(p, len, MADV_HUGEPAGE) == 0) b.fallbackReason += "; using THP madvise";
  return b;
}

}  // namespace tide::transport::rdma
