#pragma once
// One rank's share of a TransferPlan, ready to run:
//  * outgoing groups: the rank's non-local moves of one (stage, bucket,
//    target[, chunk]) as one batch of one-sided writes whose last request
//    carries an immediate naming the group at the target ("unit");
//  * local tasks: the rank's local copies / conversions of one (stage, bucket);
//  * incoming units: what the rank waits for, by the same numbering.
// Every rank numbers the units identically because it walks the same plan in
// the same order. A task of (stage s, bucket b) may run once everything the
// rank receives or produces locally for s's dependencies has landed (per
// bucket or whole stage); a broadcast hop chunk also waits for the same chunk
// from the previous hop, which is how the chain pipelines.

#include <cstdint>
#include <vector>

#include "engine/core/status.h"
#include "engine/exec/executor/rank_layout.h"
#include "engine/plan/transfer_plan.h"

namespace tide::exec {

struct OutGroup {
  uint32_t stage = 0;
  uint32_t bucket = 0;
  uint32_t chunk = 0;  // broadcast hops: chunk index of the bucket
  bool hop = false;
  int32_t peer = -1;
  uint32_t unit = 0;  // id of this group at the peer (the immediate)
  plan::Space srcSpace = plan::Space::kTrain;
  plan::Space dstSpace = plan::Space::kInfer;
  std::vector<Run> runs;  // src offsets in this rank's buffer, dst in the peer's
  uint64_t bytes = 0;
};

// A bf16 -> FP8 conversion of `box` (fp8_blocks.h); src and dst point into
// the rank's layout.
struct Quantize {
  plan::RegionBox box;
  uint32_t tensor = 0;
  const Placed* src = nullptr;
  const Placed* dst = nullptr;
};

struct LocalTask {
  uint32_t stage = 0;
  uint32_t bucket = 0;
  plan::Space srcSpace = plan::Space::kTrain;
  plan::Space dstSpace = plan::Space::kInfer;
  std::vector<Run> runs;
  std::vector<Quantize> quantize;
  uint64_t bytes = 0;

  // Copies the runs and quantizes, from the rank's `src` buffer to `dst`.
  [[nodiscard]] Status run(const plan::TransferPlan& p, const uint8_t* src, uint8_t* dst) const;
};

struct InUnit {
  uint32_t stage = 0;
  uint32_t bucket = 0;
  uint32_t chunk = 0;
  bool hop = false;
  int32_t src = -1;
};

struct RankSchedule {
  uint32_t rank = 0;
  std::vector<OutGroup> out;
  std::vector<LocalTask> local;
  std::vector<InUnit> in;  // index = unit id
  uint64_t chunkBytes = 0;

  // Builds the schedule of `rank`. chunkBytes: broadcast hop pipelining unit
  // (0 = the plan's params.chunk_bytes, else 1 MiB).
  static Result<RankSchedule> build(const plan::TransferPlan& p,
                                    const std::vector<RankLayout>& layouts, uint32_t rank,
                                    uint64_t chunkBytes = 0);
};

}  // namespace tide::exec
