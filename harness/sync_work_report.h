#pragma once
// `tide sync`: the plan's non-wire steps in the JSON (`work`) and the
// summary: per step kind, what the executor did with it. Register steps are
// performed at set-up and timed per rank, beside the pages the plan counted;
// a kind the executor cannot perform here says why ("skipped: ...").

#include <nlohmann/json.hpp>

#include "engine/exec/rank/sync_run.h"
#include "engine/plan/transfer_plan.h"

namespace tide::harness {

// Fails (kInternal) when a rank registered other bytes than its register
// step counted: the plan and the executor would disagree on what is pinned.
[[nodiscard]] Status reportWork(const plan::TransferPlan& p, const exec::SetupStats& setup,
                                nlohmann::json& j);

}  // namespace tide::harness
