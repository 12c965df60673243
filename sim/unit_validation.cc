#include "sim/unit_validation.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

namespace tide::sim {

namespace {

uint64_t pieceKey(uint32_t unit, uint32_t piece) {
  return (static_cast<uint64_t>(unit) << 32) | piece;
}

Status off(const std::string& what) {
  return TIDE_ERROR(Code::kDataLoss, "the real run did not follow the schedule: " + what);
}

std::string unitText(const plan::Schedule& s, uint32_t id) {
  const plan::Unit& u = s.units[id];
  return "unit " + std::to_string(id) + " (" + u.name() + " of rank " + std::to_string(u.rank) +
         ")";
}

}  // namespace

Result<UnitErrors> compareUnits(const plan::Schedule& s, const std::vector<UnitTime>& real,
                                const std::vector<UnitTime>& simulated) {
  // The real record against the schedule, update by update.
  std::map<int32_t, std::unordered_map<uint64_t, const UnitTime*>> byStep;
  for (const UnitTime& t : real) {
    if (t.unit >= s.units.size())
      return off("update " + std::to_string(t.step) + " ran unit " + std::to_string(t.unit) +
                 ", which the schedule does not list (" + std::to_string(s.units.size()) +
                 " units)");
    const plan::Unit& u = s.units[t.unit];
    if (t.piece >= u.pieces)
      return off(unitText(s, t.unit) + " has " + std::to_string(u.pieces) +
                 " pieces; the run ran piece " + std::to_string(t.piece));
    if (t.rank != static_cast<int32_t>(u.rank))
      return off(unitText(s, t.unit) + " ran on rank " + std::to_string(t.rank));
    if (!byStep[t.step].emplace(pieceKey(t.unit, t.piece), &t).second)
      return off("update " + std::to_string(t.step) + ": " + unitText(s, t.unit) + " piece " +
                 std::to_string(t.piece) + " ran twice");
  }
  if (byStep.empty()) return off("no unit ran");
  // Gate members a rank runs itself (its local units): their ends are on
  // the clock of the unit that waits for them.
  std::vector<std::vector<uint32_t>> ownMembers(s.gates.size());
  for (uint32_t id = 0; id < s.units.size(); ++id) {
    const plan::Unit& u = s.units[id];
    for (uint32_t g : u.gates)
      if (g != plan::kNoGate && s.gates[g].rank == u.rank) ownMembers[g].push_back(id);
  }
  std::map<int32_t, double> stepTime;
  for (const auto& [step, pieces] : byStep) {
    if (pieces.size() != s.pieces) {
      for (uint32_t id = 0; id < s.units.size(); ++id)
        for (uint32_t k = 0; k < s.units[id].pieces; ++k)
          if (!pieces.count(pieceKey(id, k)))
            return off("update " + std::to_string(step) + ": " + unitText(s, id) + " piece " +
                       std::to_string(k) + " did not run");
    }
    double longest = 0;
    for (const auto& [key, t] : pieces) {
      longest = std::max(longest, t->end);
      const plan::Unit& u = s.units[t->unit];
      for (auto* d = s.depsBegin(u); d != s.depsEnd(u); ++d) {
        if (d->kind != plan::DepKind::kGate) continue;
        for (uint32_t m : ownMembers[d->id]) {
          for (uint32_t k = 0; k < s.units[m].pieces; ++k) {
            const UnitTime* before = pieces.at(pieceKey(m, k));
            if (before->end > t->start + 1e-6)
              return off("update " + std::to_string(step) + ": " + unitText(s, t->unit) +
                         " started at " + std::to_string(t->start) + " s, before " +
                         unitText(s, m) + ", which it waits for, ended at " +
                         std::to_string(before->end) + " s");
          }
        }
      }
    }
    stepTime[step] = longest;
  }
  // Each real piece's end against the simulated one.
  std::unordered_map<uint64_t, double> simEnd;
  for (const UnitTime& t : simulated) simEnd[pieceKey(t.unit, t.piece)] = t.end;
  if (simEnd.size() != s.pieces) {
    return TIDE_ERROR(Code::kInvalidArgument,
                      "the simulation priced " + std::to_string(simEnd.size()) + " of the " +
                          std::to_string(s.pieces) +
                          " pieces one by one (it merged units of a plan this large)");
  }
  UnitErrors e;
  std::vector<double> errors;
  for (const auto& [step, pieces] : byStep) {
    const double span = std::max(stepTime[step], 1e-12);
    for (const auto& [key, t] : pieces) {
      const double sim = simEnd.at(key);
      const double err = std::abs(sim - t->end) / span;
      errors.push_back(err);
      if (err >= e.worst) {
        e.worst = err;
        e.worstStep = step;
        e.worstUnit = t->unit;
        e.worstPiece = t->piece;
        e.worstRank = s.units[t->unit].rank;
        e.worstKind = s.units[t->unit].name();
        e.worstRealEnd = t->end;
        e.worstSimEnd = sim;
      }
    }
  }
  std::sort(errors.begin(), errors.end());
  e.compared = errors.size();
  auto at = [&](double q) {
    return errors[std::min(errors.size() - 1, static_cast<size_t>(q * (errors.size() - 1) + 0.5))];
  };
  e.median = at(0.5);
  e.p90 = at(0.9);
  return e;
}

std::vector<UnitTime> simulatedUnits(const StrategyResult& r) {
  std::vector<UnitTime> out;
  for (const auto& e : r.events) {
    if (e.unit != kNoUnit) out.push_back({0, e.unit, e.piece, e.src, e.tStart, e.tEnd});
  }
  return out;
}

nlohmann::json UnitErrors::toJson() const {
  return {{"compared_pieces", compared},
          {"what", "|simulated end - real end| of each piece / the real update's time"},
          {"median", median},
          {"p90", p90},
          {"worst",
           {{"error", worst},
            {"step", worstStep},
            {"unit", worstUnit},
            {"piece", worstPiece},
            {"rank", worstRank},
            {"kind", worstKind},
            {"real_end_s", worstRealEnd},
            {"sim_end_s", worstSimEnd}}}};
}

nlohmann::json unitTimesJson(const std::vector<UnitTime>& t) {
  nlohmann::json rows = nlohmann::json::array();
  for (const UnitTime& u : t) rows.push_back({u.step, u.unit, u.piece, u.rank, u.start, u.end});
  return {{"fields", {"step", "unit", "piece", "rank", "start_s", "end_s"}},
          {"rows", std::move(rows)}};
}

Result<std::vector<UnitTime>> unitTimesFromJson(const nlohmann::json& j) {
  auto bad = [](const std::string& m) { return TIDE_ERROR(Code::kInvalidArgument, "units: " + m); };
  if (!j.is_object() || !j.contains("rows") || !j["rows"].is_array()) return bad("no rows");
  std::vector<UnitTime> out;
  out.reserve(j["rows"].size());
  for (const auto& r : j["rows"]) {
    if (!r.is_array() || r.size() != 6)
      return bad("a row is not [step, unit, piece, rank, start, end]");
    for (const auto& v : r)
      if (!v.is_number()) return bad("a row has a field that is no number");
    if (r[1].get<double>() < 0 || r[2].get<double>() < 0) return bad("a negative unit or piece");
    UnitTime t{r[0].get<int32_t>(), r[1].get<uint32_t>(), r[2].get<uint32_t>(),
               r[3].get<int32_t>(), r[4].get<double>(),   r[5].get<double>()};
    if (!std::isfinite(t.start) || !std::isfinite(t.end) || t.end < t.start)
      return bad("times must be finite with end >= start");
    out.push_back(t);
  }
  return out;
}

}  // namespace tide::sim
