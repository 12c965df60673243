#include "engine/exec/launch/host_lock.h"

#include <fcntl.h>
#include <sys/file.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <random>
#include <thread>

#include "engine/core/clock.h"
#include "engine/core/errno_status.h"
#include "engine/core/log.h"

namespace tide::exec {

Result<UniqueFd> lockHostFile(const char* path, const std::string& what, double waitSeconds) {
  UniqueFd fd(::open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd.valid()) return TIDE_ERRNO(std::string("open ") + path);
  Deadline deadline = Deadline::after(waitSeconds);
  bool told = false;
  while (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) return TIDE_ERRNO(std::string("flock ") + path);
    if (deadline.expired())
      return TIDE_ERROR(
          Code::kUnavailable,
          "another " + what + " is up on this host (" + std::string(path) + " is locked)" +
              (waitSeconds > 0
                   ? " and stayed up for " + std::to_string(static_cast<int>(waitSeconds)) + " s"
                   : ""));
    if (!told) TIDE_LOG_WARN("{}: waiting for the one already up on this host", what);
    told = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return fd;
}

Result<ClusterClaim> claimHost(const std::string& what, const char* lockPath, int nodes,
                               int maxNodes, double bytesPerSecond, const std::string& missing,
                               Code missingCode, const char* tag, double waitSeconds) {
  if (nodes < 1 || nodes > maxNodes) {
    return TIDE_ERROR(Code::kInvalidArgument,
                      what + ": nodes must be in 1.." + std::to_string(maxNodes));
  }
  if (!(bytesPerSecond > 0)) {
    return TIDE_ERROR(Code::kInvalidArgument, what + ": the NIC rate must be > 0");
  }
  if (!missing.empty()) return TIDE_ERROR(missingCode, missing);
  ClusterClaim c;
  TIDE_ASSIGN_OR_RETURN(c.lock, lockHostFile(lockPath, what, waitSeconds));
  std::random_device rd;
  char p[16];
  std::snprintf(p, sizeof p, "%s%04x", tag, static_cast<unsigned>(rd() & 0xffff));
  c.prefix = p;
  return c;
}

}  // namespace tide::exec
