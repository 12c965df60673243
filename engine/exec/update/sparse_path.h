#pragma once
// Sparse p2p: instead of the bytes of a group, a sender writes the group's
// delta block (engine/sync/delta, version V-1 -> V) into a slot of the
// target's inbox; the target applies it to the runs the group covers in its
// inference shard. The sender keeps the previous version of its source
// spaces (a copy made after each verified step) to encode against; the
// block carries hashes of the base and of the result, so a target that does
// not hold V-1, or a torn block, fails with kDataLoss before any byte of the
// shard changes.
//
// Memory cost: the sender keeps one previous copy of its source spaces and
// an outbox; the target an inbox. Outbox and inbox reserve the full group
// size plus a header per group (a delta block is never larger), so a
// dense step still fits.

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/kv_store.h"
#include "engine/exec/executor/rank_layout.h"
#include "engine/exec/executor/rank_schedule.h"
#include "engine/transport/registration.h"
#include "engine/transport/transport.h"
#include "workloads/weights.h"

namespace tide::exec {

struct SparseCounters {
  uint64_t encodedBytes = 0;  // what went on the wire
  uint64_t fullBytes = 0;     // what a full p2p write of the same groups moves
  uint64_t elements = 0, changed = 0;
};

class SparsePath {
 public:
  using Buffers = std::array<uint8_t*, kSpaceCount>;

  // Registers inbox/outbox, publishes the inbox and its slot offsets through
  // `store`, imports the inboxes of the peers this rank writes to, and fills
  // the previous-version copy with version 0 from the generator.
  static Result<std::unique_ptr<SparsePath>> create(const plan::TransferPlan& plan,
                                                    const std::vector<RankLayout>& layouts,
                                                    const RankSchedule& schedule,
                                                    const workloads::SyntheticWeights& weights,
                                                    transport::Transport& transport, Store& store,
                                                    double timeoutSeconds);
  ~SparsePath();
  SparsePath(const SparsePath&) = delete;
  SparsePath& operator=(const SparsePath&) = delete;

  // Encodes out-group `group` (its source space holds version V) into the
  // outbox; returns the one request that writes the block into the peer's slot.
  Result<transport::Request> encode(size_t group, const Buffers& buffers);
  // Checks the block that arrived for incoming `unit` against the rank's
  // shard (structure, payload hash, base = the version the shard holds).
  Status check(uint32_t unit, const Buffers& buffers);
  // Applies every incoming block, once all arrived and passed check(): a
  // torn or wrong block stops the update before any shard byte changes.
  Status applyAll(const Buffers& buffers);
  // After a verified step: the source spaces become the previous version.
  void commit(const Buffers& buffers);

  // Counters of the current step (reset by takeCounters).
  SparseCounters takeCounters();
  uint64_t memoryBytes() const;  // previous copies + inbox + outbox

 private:
  SparsePath(const RankSchedule& schedule, transport::Transport& transport)
      : schedule_(schedule), transport_(transport) {}
  std::string where(uint32_t unit) const;

  const RankSchedule& schedule_;
  transport::Transport& transport_;
  std::array<std::vector<uint8_t>, kSpaceCount> prev_;  // source spaces at V-1
  std::vector<OutGroup> incoming_;                      // by unit
  std::vector<uint64_t> inSlot_, outSlot_;              // slot offsets
  transport::Registration inbox_, outbox_;
  uint64_t inboxBytes_ = 0, outboxBytes_ = 0;
  std::vector<uint32_t> peerInbox_;               // remote region id by peer
  std::vector<std::vector<uint64_t>> peerSlots_;  // slot offsets by peer, by unit
  std::vector<uint8_t> old_, next_, enc_;         // scratch
  SparseCounters counters_;
};

// Slot size reserved for a group of `bytes`: a delta block never exceeds it.
uint64_t sparseSlotBytes(uint64_t bytes);

}  // namespace tide::exec
