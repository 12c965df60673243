#pragma once
// One rank's share of the plan's schedule (engine/plan/schedule.h), with
// the addresses that make it runnable:
//  * outgoing groups: each of the rank's units that writes to a peer, one
//    group per piece (a write unit is one piece; a hop, one per chunk), a
//    batch of one-sided writes whose last request carries the piece's
//    number at the peer as its immediate;
//  * local tasks: the rank's local units (copies, conversions);
//  * incoming units: what the rank waits for, by the number the immediate
//    carries.
// When a unit may run is the schedule's: its dependencies (gates, the same
// piece of the previous hop) are read from there, never derived here.

#include <cstdint>
#include <vector>

#include "engine/core/status.h"
#include "engine/exec/executor/rank_layout.h"
#include "engine/plan/schedule.h"
#include "engine/plan/transfer_plan.h"

namespace tide::exec {

struct OutGroup {
  uint32_t id = 0;     // the schedule's unit
  uint32_t piece = 0;  // of the unit (hops: the chunk)
  uint32_t stage = 0;
  uint32_t bucket = 0;
  bool hop = false;
  int32_t peer = -1;
  uint32_t unit = 0;  // number of this piece at the peer (the immediate)
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
  uint32_t id = 0;  // the schedule's unit
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
  uint32_t id = 0;     // the schedule's unit
  uint32_t piece = 0;  // of the unit
  uint32_t stage = 0;
  uint32_t bucket = 0;
  bool hop = false;
  int32_t src = -1;
};

struct RankSchedule {
  uint32_t rank = 0;
  const plan::Schedule* units = nullptr;  // the schedule this share is of
  std::vector<OutGroup> out;
  std::vector<LocalTask> local;
  std::vector<InUnit> in;  // index = the number the immediate carries

  // The share of `rank` in `schedule` (which must outlive it), the plan it
  // was built from and the ranks' layouts.
  static Result<RankSchedule> build(const plan::TransferPlan& p, const plan::Schedule& schedule,
                                    const std::vector<RankLayout>& layouts, uint32_t rank);
};

}  // namespace tide::exec
