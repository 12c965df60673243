#pragma once
// Memfd-backed host memory of the shm backend (ShmTransport::allocateHost)
// and the process-wide table that lets registerRegion() recognise it: a
// region that lies in such a block is published with its memfd, and peers in
// other processes map it once and copy with memcpy instead of pinning pages
// with process_vm_writev on every request.

#include <cstdint>
#include <optional>

#include "engine/transport/host_memory.h"

namespace tide::transport::shm {

// Where a registered range lives inside a memfd of this process.
struct MemfdRange {
  int fd = -1;              // fd number in this process (peers open /proc/<pid>/fd/<fd>)
  uint64_t fileOffset = 0;  // of the range's first byte
  uint64_t inode = 0;       // lets a peer check it opened the right file
};

// Allocates `size` bytes (at least one page) in a fresh memfd, mapped shared.
Result<HostMemory> allocateShared(uint64_t size);

// The memfd behind [addr, addr+size) if all of it lies in one live
// allocateShared() block.
std::optional<MemfdRange> findShared(const void* addr, uint64_t size);

}  // namespace tide::transport::shm
