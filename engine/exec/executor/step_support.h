#pragma once
// Which of a plan's non-wire steps (engine/plan/plan_steps.h) the real
// executor performs on this host, and why not the others. Performed steps
// are timed (a register step at set-up: RankExecutor::setupWork); a skipped
// one is reported with its reason, never counted as done.

#include <string>

#include "engine/plan/plan_steps.h"

namespace tide::exec {

// Empty when the executor performs steps of kind `k`; else the reason.
std::string whyNotPerformed(plan::StepKind k);

}  // namespace tide::exec
