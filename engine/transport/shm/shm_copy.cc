#include "engine/transport/shm/shm_copy.h"

#include <sys/prctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include "engine/core/errno_status.h"

namespace tide::transport::shm {
namespace {

Status syscallError(int err, pid_t pid, int peerRank, const char* what) {
  std::string who = "rank " + std::to_string(peerRank) + " (pid " + std::to_string(pid) + ")";
  switch (err) {
    case ESRCH:
      return TIDE_ERROR(Code::kUnavailable, who + " is gone (process exited)");
    case EPERM:
    case EACCES:
      return TIDE_ERROR(Code::kPermissionDenied,
                        std::string(what) + " to " + who +
                            " not permitted: shm ranks must run as the same user, and ptrace "
                            "restrictions (kernel.yama.ptrace_scope >= 2, seccomp, containers) "
                            "must allow it; use the tcp backend otherwise");
    case EFAULT:
      return TIDE_ERROR(Code::kInvalidArgument,
                        std::string(what) + " with " + who +
                            ": bad address (registered memory was unmapped while registered)");
    default:
      errno = err;
      return TIDE_ERRNO(std::string(what) + " with " + who);
  }
}

}  // namespace

Status copyWithPeer(Direction dir, pid_t pid, int peerRank, void* local, uint64_t remote,
                    uint64_t length, bool forceSyscall) {
  if (length == 0) return Status::ok();
  static const pid_t self = ::getpid();
  if (pid == self && !forceSyscall) {
    void* r = reinterpret_cast<void*>(remote);
    if (dir == Direction::kToPeer)
      std::memcpy(r, local, length);
    else
      std::memcpy(local, r, length);
    return Status::ok();
  }
  uint64_t done = 0;
  while (done < length) {
    iovec l{static_cast<char*>(local) + done, length - done};
    iovec r{reinterpret_cast<void*>(remote + done), length - done};
    ssize_t n = dir == Direction::kToPeer ? ::process_vm_writev(pid, &l, 1, &r, 1, 0)
                                          : ::process_vm_readv(pid, &l, 1, &r, 1, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return syscallError(errno, pid, peerRank,
                          dir == Direction::kToPeer ? "process_vm_writev" : "process_vm_readv");
    }
    if (n == 0)
      return TIDE_ERROR(Code::kInternal, "process_vm copy with rank " + std::to_string(peerRank) +
                                             " made no progress");
    done += static_cast<uint64_t>(n);
  }
  return Status::ok();
}

Status probePeerAccess(pid_t pid, int peerRank, uint64_t probeAddr) {
  if (pid == ::getpid()) return Status::ok();
  uint64_t word = 0;
  iovec l{&word, sizeof word};
  iovec r{reinterpret_cast<void*>(probeAddr), sizeof word};
  if (::process_vm_readv(pid, &l, 1, &r, 1, 0) != static_cast<ssize_t>(sizeof word))
    return syscallError(errno, pid, peerRank, "process_vm_readv");
  return Status::ok();
}

void allowSiblingAccess() {
  std::ifstream in("/proc/sys/kernel/yama/ptrace_scope");
  int scope = 0;
  if (in >> scope && scope == 1) ::prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
}

}  // namespace tide::transport::shm
