#include "engine/transport/shm/shm_segment.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <new>
#include <thread>

#include "engine/core/clock.h"
#include "engine/core/errno_status.h"
#include "engine/core/sanitizers.h"
#if TIDE_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace tide::transport::shm {
namespace {

// See Segment::tsanKey_.
void tsanRelease([[maybe_unused]] void* key) {
#if TIDE_TSAN
  __tsan_release(key);
#endif
}

void tsanAcquire([[maybe_unused]] void* key) {
#if TIDE_TSAN
  __tsan_acquire(key);
#endif
}

constexpr size_t kSegmentBytes = (sizeof(SegmentLayout) + 4095) & ~size_t{4095};

void futexWait(std::atomic<uint32_t>* word, uint32_t expected, double seconds) {
  if (seconds <= 0) return;
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(seconds);
  ts.tv_nsec = static_cast<long>((seconds - static_cast<double>(ts.tv_sec)) * 1e9);
  // Shared (not private) futex: waiter and waker may be different processes.
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void futexWake(std::atomic<uint32_t>* word) {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT32_MAX, nullptr, nullptr,
            0);
}

// Locks the ring mutex; a holder that died leaves it consistent enough (the
// ring indices are only written after the entry), so recover and go on.
Status lockRing(pthread_mutex_t* mu) {
  int rc = pthread_mutex_lock(mu);
  if (rc == EOWNERDEAD) {
    pthread_mutex_consistent(mu);
    return Status::ok();
  }
  if (rc != 0) {
    errno = rc;
    return TIDE_ERRNO("shm notification ring lock");
  }
  return Status::ok();
}

}  // namespace

Result<Segment> Segment::create(int rank) {
  Segment s;
  s.fd_.reset(::memfd_create("tide-shm", MFD_CLOEXEC));
  if (!s.fd_.valid()) return TIDE_ERRNO("memfd_create");
  if (::ftruncate(s.fd_.get(), kSegmentBytes) != 0) return TIDE_ERRNO("ftruncate shm segment");
  void* p = ::mmap(nullptr, kSegmentBytes, PROT_READ | PROT_WRITE, MAP_SHARED, s.fd_.get(), 0);
  if (p == MAP_FAILED) return TIDE_ERRNO("mmap shm segment");
  s.map_ = Mapping(p, kSegmentBytes);
  s.tsanKey_ = p;
  auto* l = new (p) SegmentLayout();
  l->pid = ::getpid();
  l->rank = rank;
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
  pthread_mutex_init(&l->ringMu, &attr);
  pthread_mutexattr_destroy(&attr);
  l->magic.store(kSegmentMagic, std::memory_order_release);
  return s;
}

Result<Segment> Segment::open(pid_t pid, int fd, int expectRank, uint64_t ownerAddr) {
  Segment s;
  std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  s.fd_.reset(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!s.fd_.valid()) {
    int err = errno;
    Status st = TIDE_ERRNO("open " + path);
    if (err == ENOENT)
      return TIDE_ERROR(Code::kUnavailable, "rank " + std::to_string(expectRank) + " (pid " +
                                                std::to_string(pid) + ") is gone: " + st.message());
    if (err == EACCES || err == EPERM)
      return TIDE_ERROR(Code::kPermissionDenied,
                        "cannot map the segment of rank " + std::to_string(expectRank) +
                            ": the shm backend needs all ranks to run as the same user on one "
                            "host (" +
                            st.message() + ")");
    return st;
  }
  void* p = ::mmap(nullptr, kSegmentBytes, PROT_READ | PROT_WRITE, MAP_SHARED, s.fd_.get(), 0);
  if (p == MAP_FAILED) return TIDE_ERRNO("mmap peer shm segment");
  s.map_ = Mapping(p, kSegmentBytes);
  // Another process's address means nothing here (and tsan sees one process).
  s.tsanKey_ = pid == ::getpid() ? reinterpret_cast<void*>(ownerAddr) : p;
  const auto* l = s.get();
  if (l->magic.load(std::memory_order_acquire) != kSegmentMagic || l->rank != expectRank ||
      l->pid != pid)
    return TIDE_ERROR(Code::kInvalidArgument, "segment published for rank " +
                                                  std::to_string(expectRank) +
                                                  " is not a tide shm segment of that rank");
  return s;
}

bool Segment::pin(uint32_t id, RegionInfo& info) const {
  RegionSlot& slot = get()->regions[id % kMaxRegions];
  uint64_t s = slot.state.load(std::memory_order_acquire);
  while (true) {
    if ((s >> 32) != id || (s & kValidBit) == 0) return false;
    if (slot.state.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel)) break;
  }
  info = slot.info;
  return true;
}

bool Segment::registered(uint32_t id) const {
  uint64_t s = get()->regions[id % kMaxRegions].state.load(std::memory_order_acquire);
  return (s >> 32) == id && (s & kValidBit) != 0;
}

void Segment::unpin(uint32_t id) const {
  get()->regions[id % kMaxRegions].state.fetch_sub(1, std::memory_order_acq_rel);
}

Status Segment::post(int32_t fromRank, uint32_t imm, double timeoutSeconds) const {
  SegmentLayout* l = get();
  Deadline deadline = Deadline::after(timeoutSeconds);
  while (true) {
    TIDE_RETURN_IF_ERROR(lockRing(&l->ringMu));
    if (l->tail - l->head < kRingSlots) {
      tsanRelease(tsanKey_);
      l->ring[l->tail % kRingSlots] = NotificationEntry{fromRank, imm};
      ++l->tail;
      pthread_mutex_unlock(&l->ringMu);
      l->seq.fetch_add(1, std::memory_order_release);
      futexWake(&l->seq);
      return Status::ok();
    }
    pthread_mutex_unlock(&l->ringMu);
    if (l->closed.load(std::memory_order_acquire))
      return TIDE_ERROR(Code::kUnavailable,
                        "rank " + std::to_string(l->rank) + " closed its transport");
    if (deadline.expired())
      return TIDE_ERROR(Code::kTimeout, "notification ring of rank " + std::to_string(l->rank) +
                                            " stayed full for " + std::to_string(timeoutSeconds) +
                                            " s (it does not consume notifications)");
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

Result<NotificationEntry> Segment::pop(double timeoutSeconds) const {
  SegmentLayout* l = get();
  Deadline deadline = Deadline::after(timeoutSeconds);
  while (true) {
    uint32_t seq = l->seq.load(std::memory_order_acquire);
    TIDE_RETURN_IF_ERROR(lockRing(&l->ringMu));
    if (l->head != l->tail) {
      NotificationEntry e = l->ring[l->head % kRingSlots];
      ++l->head;
      pthread_mutex_unlock(&l->ringMu);
      tsanAcquire(tsanKey_);
      return e;
    }
    pthread_mutex_unlock(&l->ringMu);
    if (l->closed.load(std::memory_order_acquire))
      return TIDE_ERROR(Code::kCancelled, "transport closed while waiting for a notification");
    if (deadline.expired())
      return TIDE_ERROR(Code::kTimeout,
                        "no notification within " + std::to_string(timeoutSeconds) + " s");
    double left = std::chrono::duration<double>(deadline.remaining()).count();
    futexWait(&l->seq, seq, left < 0.05 ? left : 0.05);
  }
}

void Segment::wake() const {
  get()->seq.fetch_add(1, std::memory_order_release);
  futexWake(&get()->seq);
}

}  // namespace tide::transport::shm
