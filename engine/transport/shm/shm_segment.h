#pragma once
// The per-rank shared control segment of the shm backend: a memfd that every
// peer maps. It holds the rank's region table (what peers check before they
// copy) and its WRITE_WITH_IMM notification ring.
//
// Trust model: ranks are processes (or threads) of the same user on one host.
// A same-user process can read and write any other through ptrace anyway, so
// the table's bounds and key checks protect against bugs (a stale descriptor,
// an off-by-one offset), not against a malicious peer.

#include <pthread.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "engine/core/fd.h"
#include "engine/core/status.h"

namespace tide::transport::shm {

inline constexpr uint32_t kMaxRegions = 4096;
inline constexpr uint32_t kRingSlots = 4096;

// What a region slot describes: the region's address in the owner's address
// space, size and key; and the memfd it lies in (owner's fd number, -1 for
// other memory), where in it, and its inode, so peers in other processes can
// map it. Written before the slot is published, read under a pin.
struct RegionInfo {
  uint64_t addr = 0;
  uint64_t size = 0;
  uint64_t key = 0;
  int32_t memfd = -1;
  uint64_t fileOffset = 0;
  uint64_t inode = 0;
};

// One region slot. `state` packs id (high 32 bits), a valid bit (bit 31) and
// the number of peers copying right now (low 31 bits), so a peer can pin a
// slot with one CAS and the owner can retire it by clearing the valid bit and
// waiting for the count to drain.
struct RegionSlot {
  std::atomic<uint64_t> state{0};
  RegionInfo info;
};

struct NotificationEntry {
  int32_t peer;
  uint32_t imm;
};

struct SegmentLayout {
  std::atomic<uint64_t> magic;  // stored last (release): the rest is initialised
  int32_t pid;
  int32_t rank;
  std::atomic<uint32_t> closed;  // owner is shutting down
  // Notification ring (multi-producer under a robust process-shared mutex,
  // single consumer); `seq` is a futex word bumped on every post.
  pthread_mutex_t ringMu;
  std::atomic<uint32_t> seq;
  uint64_t head;  // next to pop
  uint64_t tail;  // next to push
  NotificationEntry ring[kRingSlots];
  RegionSlot regions[kMaxRegions];
};

inline constexpr uint64_t kSegmentMagic = 0x746964655f73686eull;  // "tide_shn": layout 2
inline constexpr uint64_t kValidBit = 1ull << 31;
inline constexpr uint64_t kUsersMask = kValidBit - 1;

// A mapped segment: the owner's (created) or a peer's (opened by pid/fd).
class Segment {
 public:
  Segment() = default;
  Segment(Segment&&) = default;
  Segment& operator=(Segment&&) = default;

  static Result<Segment> create(int rank);
  // Opens a peer's memfd through /proc/<pid>/fd/<fd> (same user required).
  // `ownerAddr` is where the owner mapped it (published with pid and fd).
  static Result<Segment> open(pid_t pid, int fd, int expectRank, uint64_t ownerAddr);

  SegmentLayout* get() const { return static_cast<SegmentLayout*>(map_.data()); }
  int fd() const { return fd_.get(); }

  // Pins slot `id` if it is registered and copies its description to `info`.
  // Returns false when the id is not (or no longer) registered.
  bool pin(uint32_t id, RegionInfo& info) const;
  // True while `id` is registered (no pin taken).
  bool registered(uint32_t id) const;
  void unpin(uint32_t id) const;

  // Queues a notification for the owner; fails after timeout if the ring is full.
  Status post(int32_t fromRank, uint32_t imm, double timeoutSeconds) const;
  // Owner side: pops one notification, waiting up to timeout.
  Result<NotificationEntry> pop(double timeoutSeconds) const;
  // Wakes a waiting pop() (used at shutdown).
  void wake() const;

 private:
  UniqueFd fd_;
  Mapping map_;
  // ThreadSanitizer keys happens-before by address, and a peer in this process
  // maps the segment at another address than its owner does, so the ring's
  // process-shared mutex orders nothing it can see (a WRITE_WITH_IMM's data
  // looks racy to the notified rank). post() releases and pop() acquires this
  // key, the owner's address of the segment; tsan builds only.
  void* tsanKey_ = nullptr;
};

}  // namespace tide::transport::shm
