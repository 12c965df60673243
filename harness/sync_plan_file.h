#pragma once
// `tide sync --plan FILE`: a recorded plan (tide plan --json) run for real.
// The plan says what the update is (model, layouts, strategy, options:
// PlanParams::workload and ::options); the run's flags say where it runs
// (cluster, backend, steps). A flag that describes the update otherwise
// than the plan does is refused, and so is a plan whose ranks, tensors or
// holdings are not what its recorded layouts give, or whose placement does
// not fit the cluster.

#include <string>

#include "engine/core/status.h"
#include "engine/plan/transfer_plan.h"
#include "harness/workload_options.h"

namespace tide::harness {

// The workload options that rebuild the plan's update. `given` (the run's
// own) may differ from `defaults` (the command's) only where it agrees with
// the plan; its cluster, when given, replaces the plan's. `inferDtype` as
// `tide sync` takes it (bf16 | model): the run's, checked against the plan's.
[[nodiscard]] Result<WorkloadOptions> recordedWorkload(const plan::TransferPlan& p,
                                                       const std::string& file,
                                                       const WorkloadOptions& given,
                                                       const WorkloadOptions& defaults,
                                                       const std::string& inferDtype);

// The plan's ranks, tensors and training / inference holdings against the
// ones the rebuilt workload lays out, and its placement against the cluster.
[[nodiscard]] Status checkRecordedPlan(const plan::TransferPlan& p, const std::string& file,
                                       const Workload& w);

}  // namespace tide::harness
