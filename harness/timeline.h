#pragma once
// The units of a plan's schedule as a real run and the simulator ran them:
// their times (what `tide validate` compares unit by unit) and one timeline
// of them (`--trace-out F.json` of tide sync, tide sim and tide validate;
// traces/chrome_trace.h, docs/formats/timeline.md).

#include <string>
#include <vector>

#include "engine/plan/schedule.h"
#include "sim/simulator.h"
#include "sim/unit_validation.h"
#include "traces/chrome_trace.h"
#include "traces/event.h"

namespace tide::harness {

inline constexpr int kRealProcess = 1;
inline constexpr int kSimProcess = 2;

// A real run's units, each update from its first unit's start.
std::vector<sim::UnitTime> realUnitTimes(const std::vector<traces::Event>& events);

// One process of the timeline: a track per rank, a slice per unit piece.
void addUnits(traces::ChromeTrace& t, int process, const std::string& label,
              const plan::TransferPlan& p, const plan::Schedule& s,
              const std::vector<sim::UnitTime>& times);
// The simulator's other work (the plan's steps, merged units), named by stage.
void addOtherWork(traces::ChromeTrace& t, int process, const sim::StrategyResult& r);

}  // namespace tide::harness
