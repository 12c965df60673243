#pragma once
// A real run and its simulation compared unit by unit: the same schedule
// (engine/plan/schedule.h) run by `tide sync` and priced by the simulator.
// First the real record is checked against the schedule — every piece of
// every unit ran once per update, on the rank the schedule names, and no
// unit started before the work of its own rank that it waits for had ended
// — then each piece's end, from the start of its update, is compared with
// the simulated one, as a fraction of the real update's time.

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/plan/schedule.h"
#include "sim/simulator.h"

namespace tide::sim {

// One piece of a unit as it ran: seconds from its update's start.
struct UnitTime {
  int32_t step = 0;
  uint32_t unit = 0;
  uint32_t piece = 0;
  int32_t rank = -1;  // who ran it
  double start = 0;
  double end = 0;
};

struct UnitErrors {
  size_t compared = 0;  // pieces, over all updates
  // |simulated end - real end| / the real update's time.
  double median = 0, p90 = 0, worst = 0;
  int32_t worstStep = 0;
  uint32_t worstUnit = 0, worstPiece = 0, worstRank = 0;
  std::string worstKind;  // plan::Unit::name()
  double worstRealEnd = 0, worstSimEnd = 0;
  nlohmann::json toJson() const;
};

// The pieces a simulation priced one by one (its events that name a unit),
// from the update's start.
std::vector<UnitTime> simulatedUnits(const StrategyResult& r);

// Fails (kDataLoss, naming the unit) when the real record does not follow
// the schedule; kInvalidArgument when the simulation has no per-unit times.
[[nodiscard]] Result<UnitErrors> compareUnits(const plan::Schedule& s,
                                              const std::vector<UnitTime>& real,
                                              const std::vector<UnitTime>& simulated);

// The `units` block of a tide.sync/1 document and back:
// {"fields": ["step","unit","piece","rank","start_s","end_s"], "rows": [...]}.
nlohmann::json unitTimesJson(const std::vector<UnitTime>& t);
[[nodiscard]] Result<std::vector<UnitTime>> unitTimesFromJson(const nlohmann::json& j);

}  // namespace tide::sim
