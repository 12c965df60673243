#pragma once
// Moves bytes between this process and a peer's address space.

#include <sys/types.h>

#include <cstdint>

#include "engine/core/status.h"

namespace tide::transport::shm {

enum class Direction { kToPeer, kFromPeer };

// Copies `length` bytes between `local` (this process) and `remote` (an
// address in process `pid`). memcpy when pid is this process and !forceSyscall,
// else process_vm_writev/readv. `peerRank` only names the peer in errors.
Status copyWithPeer(Direction dir, pid_t pid, int peerRank, void* local, uint64_t remote,
                    uint64_t length, bool forceSyscall);

// Fails with a clear error when this process may not access `pid`'s memory
// (different user, ptrace restrictions). Reads 8 bytes at `probeAddr`.
Status probePeerAccess(pid_t pid, int peerRank, uint64_t probeAddr);

// Under Yama ptrace_scope 1 only ancestors may access a process; sibling ranks
// (as `tide launch` starts them) must opt in. No-op elsewhere.
void allowSiblingAccess();

}  // namespace tide::transport::shm
