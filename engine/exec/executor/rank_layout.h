#pragma once
// Where a rank's plan buffers lie in its memory. Every rank keeps one buffer
// per plan space (train, staging, infer, bucket); each holding (or bucket
// entry) is a row-major block of its box inside that buffer, in plan order.
// Any rank can compute any other rank's layout from the plan alone, so a
// sender addresses a one-sided write without asking the target.

#include <array>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "engine/core/status.h"
#include "engine/plan/transfer_plan.h"

namespace tide::exec {

inline constexpr int kSpaceCount = 4;

// A holding or bucket entry placed in a space buffer.
struct Placed {
  uint32_t tensor = 0;
  plan::RegionBox box;
  workloads::DType dtype = workloads::DType::kBF16;
  uint64_t offset = 0;  // bytes from the start of the space buffer
  uint64_t bytes = 0;
  uint32_t bucket = plan::kWholeBucket;  // bucket entries only
  uint32_t fp8Block = 0;                 // FP8: block edge; scales follow the data (fp8_blocks.h)
};

// One contiguous copy: [srcOffset, +bytes) -> [dstOffset, +bytes).
struct Run {
  uint64_t srcOffset = 0;
  uint64_t dstOffset = 0;
  uint64_t bytes = 0;
};

class RankLayout {
 public:
  // Layouts of every rank of the plan. Fails on FP8 without block scales.
  static Result<std::vector<RankLayout>> buildAll(const plan::TransferPlan& p);

  uint64_t spaceBytes(plan::Space s) const { return bytes_[static_cast<int>(s)]; }
  const std::vector<Placed>& placed(plan::Space s) const { return placed_[static_cast<int>(s)]; }
  // The block of space `s` holding `box` of `tensor` (for kBucket: an entry of `bucket`).
  Result<const Placed*> find(plan::Space s, uint32_t tensor, const plan::RegionBox& box,
                             uint32_t bucket) const;
  // Offset and size of a whole bucket in the kBucket buffer.
  Result<std::pair<uint64_t, uint64_t>> bucketExtent(uint32_t bucket) const;

 private:
  void place(plan::Space s, Placed p);

  std::array<uint64_t, kSpaceCount> bytes_{};
  std::array<std::vector<Placed>, kSpaceCount> placed_;
  // (tensor, or bucket<<32|tensor for kBucket) -> indices into placed_.
  std::array<std::unordered_map<uint64_t, std::vector<uint32_t>>, kSpaceCount> index_;
  std::unordered_map<uint32_t, std::pair<uint64_t, uint64_t>> buckets_;
};

// Contiguous runs that copy `box` from a block placed as `src` to one placed
// as `dst` (both row-major over their own boxes, same element size);
// adjacent runs are merged. Appends to `out`.
void boxRuns(const plan::RegionBox& box, const Placed& src, const Placed& dst, uint64_t elemBytes,
             std::vector<Run>& out);

}  // namespace tide::exec
