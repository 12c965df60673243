#include "engine/sync/disk_delta_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "engine/core/errno_status.h"
#include "engine/core/fd.h"

#ifdef TIDE_HAVE_URING
#include <liburing.h>

#include "engine/core/sanitizers.h"
#if TIDE_TSAN
// liburing maps its rings with raw syscalls that ThreadSanitizer does not see:
// it keeps the history of a ring another thread unmapped at the same address
// and reports this ring's SQE/CQE accesses as races with it. liburing.h's
// inline helpers touch only ring memory (the kernel moves the data), so reports
// whose top frame is one of them are dropped. This is the only use of the hook.
extern "C" const char* __tsan_default_suppressions() {
  return "race_top:liburing.h\n";
}
#endif
#endif

namespace tide::sync {

TokenBucket::TokenBucket(double bytesPerSec, uint64_t burstBytes)
    : rate_(bytesPerSec),
      burst_(static_cast<double>(std::max<uint64_t>(burstBytes, 1))),
      tokens_(burst_),
      last_(std::chrono::steady_clock::now()) {}

void TokenBucket::acquire(uint64_t bytes) {
  if (rate_ <= 0) return;
  std::chrono::duration<double> wait{0};
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto now = std::chrono::steady_clock::now();
    tokens_ =
        std::min(burst_, tokens_ + rate_ * std::chrono::duration<double>(now - last_).count());
    last_ = now;
    tokens_ -= static_cast<double>(bytes);
    // A debt is paid by sleeping; later callers see it and wait behind us.
    if (tokens_ < 0) wait = std::chrono::duration<double>(-tokens_ / rate_);
  }
  if (wait.count() > 0) std::this_thread::sleep_for(wait);
}

bool uringAvailable() {
#ifdef TIDE_HAVE_URING
  return true;
#else
  return false;
#endif
}

namespace {

// pread/pwrite loop in blocks of io.blockBytes.
Status transferPlain(int fd, uint8_t* buf, uint64_t len, bool write, const FileIoOptions& io,
                     const std::string& path) {
  uint64_t off = 0;
  while (off < len) {
    uint64_t n = std::min<uint64_t>(io.blockBytes, len - off);
    if (io.cap) io.cap->acquire(n);
    uint64_t done = 0;
    while (done < n) {
      ssize_t r = write ? ::pwrite(fd, buf + off + done, n - done, static_cast<off_t>(off + done))
                        : ::pread(fd, buf + off + done, n - done, static_cast<off_t>(off + done));
      if (r < 0) {
        if (errno == EINTR) continue;
        return TIDE_ERRNO((write ? "write " : "read ") + path);
      }
      if (r == 0) return TIDE_ERROR(Code::kDataLoss, "unexpected end of file: " + path);
      done += static_cast<uint64_t>(r);
    }
    off += n;
  }
  return Status::ok();
}

#ifdef TIDE_HAVE_URING
// Keeps up to io.depth block requests in flight; short transfers are
// resubmitted for their remainder.
Status transferUring(int fd, uint8_t* buf, uint64_t len, bool write, const FileIoOptions& io,
                     const std::string& path) {
  struct io_uring ring;
  unsigned depth = std::max<uint32_t>(io.depth, 1);
  int rc = io_uring_queue_init(depth, &ring, 0);
  if (rc < 0) return transferPlain(fd, buf, len, write, io, path);  // e.g. seccomp: fall back
  struct Req {
    uint64_t off = 0, len = 0;
  };
  std::vector<Req> reqs(depth);
  std::vector<unsigned> freeSlots;
  for (unsigned i = 0; i < depth; ++i) freeSlots.push_back(i);
  uint64_t next = 0;
  unsigned inFlight = 0;
  Status st = Status::ok();
  auto submit = [&](unsigned slot) {
    struct io_uring_sqe* sqe = io_uring_get_sqe(&ring);
    Req& q = reqs[slot];
    if (write)
      io_uring_prep_write(sqe, fd, buf + q.off, static_cast<unsigned>(q.len), q.off);
    else
      io_uring_prep_read(sqe, fd, buf + q.off, static_cast<unsigned>(q.len), q.off);
    io_uring_sqe_set_data(sqe, reinterpret_cast<void*>(static_cast<uintptr_t>(slot)));
    ++inFlight;
  };
  while ((next < len || inFlight > 0)) {
    while (st.isOk() && next < len && !freeSlots.empty()) {
      unsigned slot = freeSlots.back();
      freeSlots.pop_back();
      uint64_t n = std::min<uint64_t>({io.blockBytes, len - next, 1u << 30});
      if (io.cap) io.cap->acquire(n);
      reqs[slot] = {next, n};
      next += n;
      submit(slot);
    }
    rc = io_uring_submit(&ring);
    if (rc < 0 && st.isOk()) st = TIDE_ERROR(codeForErrno(-rc), "io_uring_submit: " + path);
    if (inFlight == 0) break;
    struct io_uring_cqe* cqe = nullptr;
    rc = io_uring_wait_cqe(&ring, &cqe);
    if (rc == -EINTR) continue;
    if (rc < 0) {
      st = TIDE_ERROR(codeForErrno(-rc), "io_uring_wait_cqe: " + path);
      break;  // cannot reap: the ring is torn down below, cancelling what is left
    }
    unsigned slot = static_cast<unsigned>(reinterpret_cast<uintptr_t>(io_uring_cqe_get_data(cqe)));
    int res = cqe->res;
    io_uring_cqe_seen(&ring, cqe);
    --inFlight;
    Req& q = reqs[slot];
    if (res < 0 && res != -EINTR && res != -EAGAIN) {
      if (st.isOk())
        st = TIDE_ERROR(codeForErrno(-res), std::string(write ? "write " : "read ") + path + ": " +
                                                std::strerror(-res));
      freeSlots.push_back(slot);
    } else if (res == 0 && !write) {
      if (st.isOk()) st = TIDE_ERROR(Code::kDataLoss, "unexpected end of file: " + path);
      freeSlots.push_back(slot);
    } else {
      uint64_t got = res > 0 ? static_cast<uint64_t>(res) : 0;
      q.off += got;
      q.len -= got;
      if (q.len > 0 && st.isOk())
        submit(slot);
      else
        freeSlots.push_back(slot);
    }
    if (!st.isOk() && inFlight == 0) break;
  }
  io_uring_queue_exit(&ring);
  return st;
}
#endif

Status transfer(int fd, uint8_t* buf, uint64_t len, bool write, const FileIoOptions& io,
                const std::string& path) {
#ifdef TIDE_HAVE_URING
  if (io.useUring) return transferUring(fd, buf, len, write, io, path);
#endif
  return transferPlain(fd, buf, len, write, io, path);
}

std::string dirOf(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
}

}  // namespace

Status syncDirectory(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return TIDE_ERRNO("open directory " + dir);
  if (::fsync(fd.get()) != 0) return TIDE_ERRNO("fsync directory " + dir);
  return Status::ok();
}

Status writeFileDurable(const std::string& path, std::span<const uint8_t> data,
                        const FileIoOptions& io) {
  // Unique per process so two writers of the same name never share a temporary.
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!fd.valid()) return TIDE_ERRNO("create " + tmp);
    Status st = transfer(fd.get(), const_cast<uint8_t*>(data.data()), data.size(), true, io, tmp);
    if (st.isOk() && ::fsync(fd.get()) != 0) st = TIDE_ERRNO("fsync " + tmp);
    if (!st.isOk()) {
      ::unlink(tmp.c_str());
      return st;
    }
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Status st = TIDE_ERRNO("rename " + tmp + " -> " + path);
    ::unlink(tmp.c_str());
    return st;
  }
  return syncDirectory(dirOf(path));
}

Result<std::vector<uint8_t>> readWholeFile(const std::string& path, const FileIoOptions& io) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return TIDE_ERRNO("open " + path);
  struct stat sb;
  if (::fstat(fd.get(), &sb) != 0) return TIDE_ERRNO("stat " + path);
  std::vector<uint8_t> out(static_cast<size_t>(sb.st_size));
  TIDE_RETURN_IF_ERROR(transfer(fd.get(), out.data(), out.size(), false, io, path));
  return out;
}

}  // namespace tide::sync
