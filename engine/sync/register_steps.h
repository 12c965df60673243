#pragma once
// A first update of tide's own designs: every rank pins and registers its
// buffers once (plan/rank_buffers.h) before any byte moves. The plan says so
// with one `register` step per rank, counted in pages; the real executor
// performs and times it at set-up, the simulator prices it with the profile
// and starts the plan's moves after it.

#include <cstdint>

#include "engine/core/status.h"
#include "engine/plan/transfer_plan.h"

namespace tide::sync {

// Adds the register steps (none for a rank with no buffers) and records
// first_update / page_bytes in the plan's params.
[[nodiscard]] Status addRegisterSteps(plan::TransferPlan& p, uint64_t pageBytes);

}  // namespace tide::sync
