#pragma once
// Staging copies between device shards and a pinned host replica, the two
// ways the issue compares:
//   * per tensor, as an RL framework's `param.to("cpu")` loop does: one copy,
//     then a wait, for every tensor;
//   * bucketed, as tide's own design would: consecutive tensors grouped into
//     buckets of about `bucketBytes`, adjacent ranges merged into one copy,
//     bucket k enqueued on stream k mod n with an event after it, so the
//     sender can start bucket k while later buckets are still copying.
// The host side must be pinned (PinnedBuffer / HostRegistration) for the
// copies to be asynchronous.

#include <cstdint>
#include <span>
#include <vector>

#include "engine/core/status.h"
#include "engine/gpu/staging_plan.h"
#include "engine/gpu/stream.h"

namespace tide::gpu {

// One copy per tensor, each waited for before the next.
[[nodiscard]] Status copyPerTensor(CopyDirection dir, uint8_t* device, uint8_t* host,
                                   std::span<const StagedTensor> tensors, const Stream& stream);

class BucketedCopy {
 public:
  // Enqueues every bucket; returns without waiting. `streams` must outlive
  // the copy's waits.
  static Result<BucketedCopy> start(CopyDirection dir, uint8_t* device, uint8_t* host,
                                    std::span<const StagedTensor> tensors, uint64_t bucketBytes,
                                    std::span<const Stream> streams);
  size_t buckets() const { return events_.size(); }
  uint64_t copies() const { return copies_; }
  // The buckets landed, counted from the first; never blocks.
  Result<size_t> landedBuckets();
  // Blocks until bucket k has landed.
  [[nodiscard]] Status waitBucket(size_t k) const;
  [[nodiscard]] Status waitAll() const;

 private:
  std::vector<Event> events_;
  uint64_t copies_ = 0;
  size_t landed_ = 0;  // events_[0, landed_) have completed
};

}  // namespace tide::gpu
