#pragma once
// What a rank receives, seen from the senders: for each incoming unit of a
// rank's schedule, the sender's group (source space and offsets, the runs it
// writes into this rank). Paths that do not move raw bytes (sparse deltas,
// disk-delta files) need it: the receiver applies or copies those runs
// itself. Built from the senders' schedules, which any rank can compute
// from the plan alone.

#include <cstdint>
#include <vector>

#include "engine/core/status.h"
#include "engine/exec/executor/rank_schedule.h"

namespace tide::exec {

// Indexed by unit id of `mine.in`; each entry is the sender's OutGroup
// addressed to mine.rank.
Result<std::vector<OutGroup>> incomingGroups(const plan::TransferPlan& plan,
                                             const std::vector<RankLayout>& layouts,
                                             const RankSchedule& mine);

}  // namespace tide::exec
