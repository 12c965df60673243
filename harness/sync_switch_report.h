#pragma once
// `tide sync`: the version switch (--switch shadow) and the elastic join
// (--join-engine-at-step) in the JSON (`switch`, `join`) and the summary.

#include <nlohmann/json.hpp>
#include <vector>

#include "engine/exec/executor/exec_report.h"
#include "engine/exec/rank/sync_run.h"

namespace tide::harness {

void reportSwitchAndJoin(bool shadow, const std::vector<exec::StepStats>& steps,
                         const exec::ExecReport& r, nlohmann::json& j);

}  // namespace tide::harness
