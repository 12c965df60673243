#include "engine/transport/shm/shm_memory.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "engine/core/errno_status.h"
#include "engine/core/fd.h"
#include "engine/core/units.h"

namespace tide::transport::shm {
namespace {

struct Block {
  uint64_t length;
  int fd;
  uint64_t inode;
};

// Live blocks by base address. Function-local statics: constructed on first
// use, so allocation from other static initialisers is safe.
std::mutex& tableMutex() {
  static std::mutex mu;
  return mu;
}
std::map<uintptr_t, Block>& table() {
  static std::map<uintptr_t, Block> blocks;
  return blocks;
}

}  // namespace

Result<HostMemory> allocateShared(uint64_t size) {
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t length = std::max<uint64_t>((size + page - 1) / page * page, page);
  UniqueFd fd(::memfd_create("tide-shm-region", MFD_CLOEXEC));
  if (!fd.valid()) return TIDE_ERRNO("memfd_create for " + formatBytes(size));
  if (::ftruncate(fd.get(), static_cast<off_t>(length)) != 0)
    return TIDE_ERRNO("ftruncate memfd to " + formatBytes(length));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return TIDE_ERRNO("fstat memfd");
  void* p = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (p == MAP_FAILED) return TIDE_ERRNO("mmap memfd of " + formatBytes(length));
  const int raw = fd.release();
  {
    std::lock_guard<std::mutex> lock(tableMutex());
    table()[reinterpret_cast<uintptr_t>(p)] = Block{length, raw, static_cast<uint64_t>(st.st_ino)};
  }
  return HostMemory(p, size, [length, raw](void* data, uint64_t) {
    {
      std::lock_guard<std::mutex> lock(tableMutex());
      table().erase(reinterpret_cast<uintptr_t>(data));
    }
    ::munmap(data, length);
    ::close(raw);
  });
}

std::optional<MemfdRange> findShared(const void* addr, uint64_t size) {
  const auto a = reinterpret_cast<uintptr_t>(addr);
  std::lock_guard<std::mutex> lock(tableMutex());
  auto it = table().upper_bound(a);
  if (it == table().begin()) return std::nullopt;
  --it;
  const uint64_t offset = a - it->first;
  if (offset > it->second.length || size > it->second.length - offset) return std::nullopt;
  return MemfdRange{it->second.fd, offset, it->second.inode};
}

}  // namespace tide::transport::shm
