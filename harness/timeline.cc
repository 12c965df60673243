#include "harness/timeline.h"

#include <algorithm>
#include <map>

namespace tide::harness {

std::vector<sim::UnitTime> realUnitTimes(const std::vector<traces::Event>& events) {
  std::map<int32_t, double> stepStart;
  for (const auto& e : events) {
    if (e.unit < 0) continue;
    auto [it, fresh] = stepStart.try_emplace(e.step, e.tStart);
    if (!fresh) it->second = std::min(it->second, e.tStart);
  }
  std::vector<sim::UnitTime> out;
  for (const auto& e : events) {
    if (e.unit < 0) continue;
    const double t0 = stepStart[e.step];
    out.push_back(
        {e.step, static_cast<uint32_t>(e.unit), e.piece, e.src, e.tStart - t0, e.tEnd - t0});
  }
  return out;
}

void addUnits(traces::ChromeTrace& t, int process, const std::string& label,
              const plan::TransferPlan& p, const plan::Schedule& s,
              const std::vector<sim::UnitTime>& times) {
  t.nameProcess(process, label + ": " + p.strategy);
  for (const auto& r : p.ranks) {
    t.nameTrack(process, static_cast<int>(r.id),
                "rank " + std::to_string(r.id) + " (" + plan::roleName(r.role) + ")");
  }
  for (const auto& u : times) {
    if (u.unit >= s.units.size()) continue;
    const plan::Unit& unit = s.units[u.unit];
    t.add({process, static_cast<int>(unit.rank), unit.name(), u.start, u.end,
           unit.bytesOfPiece(u.piece), unit.local() ? -1 : static_cast<int32_t>(unit.peer),
           static_cast<int64_t>(u.unit), u.piece, u.step});
  }
  t.addSendRates(process);
}

void addOtherWork(traces::ChromeTrace& t, int process, const sim::StrategyResult& r) {
  for (const auto& e : r.events) {
    if (e.unit != sim::kNoUnit) continue;
    const std::string name =
        e.stage < r.stageNames.size() ? r.stageNames[e.stage] : std::string("work");
    t.add({process, std::max(0, e.src), name, e.tStart, e.tEnd, static_cast<uint64_t>(e.bytes),
           e.dst, -1, 0, 0});
  }
}

}  // namespace tide::harness
