#include "engine/plan/schedule.h"

#include <algorithm>
#include <string>
#include <unordered_map>

namespace tide::plan {

namespace {

// (a, b, c, d) of 32 bits each: a unit's (rank, peer, stage, bucket), a
// gate's (rank, stage, bucket, 0), a hop's (receiver, stage, bucket, 0).
struct Key {
  uint32_t a, b, c, d;
  bool operator==(const Key&) const = default;
};
struct KeyHash {
  size_t operator()(const Key& k) const {
    uint64_t h = (static_cast<uint64_t>(k.a) << 32 | k.b) * 0x9e3779b97f4a7c15ull;
    h ^= (static_cast<uint64_t>(k.c) << 32 | k.d) + 0x632be59bd9b4e019ull + (h << 6) + (h >> 2);
    return static_cast<size_t>(h);
  }
};
using KeyMap = std::unordered_map<Key, uint32_t, KeyHash>;

UnitKind kindOf(const Move& m) {
  if (m.src == m.dst) return UnitKind::kLocal;
  return m.kind == MoveKind::kBroadcastHop ? UnitKind::kHop : UnitKind::kWrite;
}

}  // namespace

const char* unitKindName(UnitKind k) {
  switch (k) {
    case UnitKind::kWrite:
      return "write";
    case UnitKind::kHop:
      return "hop";
    case UnitKind::kLocal:
      return "local";
  }
  return "?";
}

const char* Unit::name() const {
  switch (kind) {
    case UnitKind::kHop:
      return "broadcast_hop";
    case UnitKind::kLocal:
      return converts ? "convert" : "copy";
    case UnitKind::kWrite:
      return moveKind == MoveKind::kGather ? "gather" : "write";
  }
  return "?";
}

Result<Schedule> Schedule::build(const TransferPlan& p) {
  Schedule s;
  const size_t nRanks = p.ranks.size();
  s.chunkBytes = std::max<uint64_t>(1, p.params.options.chunkBytes);
  s.unitsOf.resize(nRanks);
  s.arrivals.resize(nRanks);

  // Units, in the order their first move appears.
  KeyMap unitOf;
  KeyMap hopInto;  // (receiver, stage, bucket) -> the hop unit landing there
  std::vector<uint32_t> unitOfMove(p.moves.size());
  std::vector<uint32_t> nextSlot(nRanks, 0);
  for (size_t i = 0; i < p.moves.size(); ++i) {
    const Move& m = p.moves[i];
    const UnitKind kind = kindOf(m);
    auto [it, fresh] = unitOf.try_emplace(Key{m.src, m.dst, m.stage, m.bucket},
                                          static_cast<uint32_t>(s.units.size()));
    if (fresh) {
      Unit u;
      u.kind = kind;
      u.moveKind = m.kind;
      u.rank = m.src;
      u.peer = m.dst;
      u.stage = m.stage;
      u.bucket = m.bucket;
      u.srcSpace = m.srcSpace;
      u.dstSpace = m.dstSpace;
      s.units.push_back(u);
      if (kind == UnitKind::kHop) hopInto[Key{m.dst, m.stage, m.bucket, 0}] = it->second;
    } else {
      const Unit& u = s.units[it->second];
      if (kind == UnitKind::kHop || u.kind == UnitKind::kHop) {
        return TIDE_ERROR(Code::kInvalidArgument,
                          "schedule: broadcast hop of bucket " + std::to_string(m.bucket) +
                              " from rank " + std::to_string(m.src) + " to rank " +
                              std::to_string(m.dst) +
                              " shares its (stage, bucket) with another move");
      }
      if (u.srcSpace != m.srcSpace || u.dstSpace != m.dstSpace || u.moveKind != m.kind) {
        return TIDE_ERROR(Code::kUnimplemented, "schedule: moves of rank " + std::to_string(m.src) +
                                                    " to rank " + std::to_string(m.dst) +
                                                    " in (stage " + p.stages[m.stage].name +
                                                    ", bucket " + std::to_string(m.bucket) +
                                                    ") span several spaces or kinds");
      }
    }
    Unit& u = s.units[it->second];
    u.bytes += m.bytes;
    u.converts = u.converts || m.srcDtype != m.dstDtype;
    ++u.moveEnd;  // a count for now
    unitOfMove[i] = it->second;
  }
  // Moves by unit; pieces and arrival slots.
  uint32_t begin = 0;
  for (Unit& u : s.units) {
    const uint32_t n = u.moveEnd;
    u.moveBegin = u.moveEnd = begin;
    begin += n;
  }
  s.moves.resize(p.moves.size());
  for (size_t i = 0; i < p.moves.size(); ++i) {
    Unit& u = s.units[unitOfMove[i]];
    s.moves[u.moveEnd++] = static_cast<uint32_t>(i);
  }
  for (uint32_t id = 0; id < s.units.size(); ++id) {
    Unit& u = s.units[id];
    if (u.kind == UnitKind::kHop) {
      u.pieces =
          static_cast<uint32_t>(std::max<uint64_t>(1, (u.bytes + s.chunkBytes - 1) / s.chunkBytes));
      u.pieceBytes = std::min(s.chunkBytes, u.bytes);
    }
    s.pieces += u.pieces;
    s.unitsOf[u.rank].push_back(id);
    if (u.local()) continue;
    u.slot = nextSlot[u.peer];
    nextSlot[u.peer] += u.pieces;
    for (uint32_t k = 0; k < u.pieces; ++k) s.arrivals[u.peer].push_back(Arrival{id, k});
  }

  // Dependencies: a gate per (rank, stage, bucket | all) some unit waits for.
  KeyMap gateOf;
  for (Unit& u : s.units) {
    u.depBegin = static_cast<uint32_t>(s.deps.size());
    for (const Dependency& d : p.stages[u.stage].deps) {
      const Key k{u.rank, d.stage, d.perBucket ? u.bucket : kAllBuckets, 0};
      auto [it, fresh] = gateOf.try_emplace(k, static_cast<uint32_t>(s.gates.size()));
      if (fresh) s.gates.push_back(Gate{u.rank, d.stage, k.c, 0});
      s.deps.push_back(UnitDep{DepKind::kGate, it->second});
    }
    if (u.kind == UnitKind::kHop) {
      auto it = hopInto.find(Key{u.rank, u.stage, u.bucket, 0});
      if (it != hopInto.end()) s.deps.push_back(UnitDep{DepKind::kSamePiece, it->second});
    }
    u.depEnd = static_cast<uint32_t>(s.deps.size());
  }
  // What counts to each gate: the units landing at its rank in its stage.
  for (Unit& u : s.units) {
    const Key keys[2] = {{u.peer, u.stage, u.bucket, 0}, {u.peer, u.stage, kAllBuckets, 0}};
    for (int i = 0; i < 2; ++i) {
      auto it = gateOf.find(keys[i]);
      if (it == gateOf.end()) continue;
      u.gates[i] = it->second;
      s.gates[it->second].pieces += u.pieces;
    }
  }
  // An empty gate is no dependency: drop it, and renumber the others.
  std::vector<uint32_t> renum(s.gates.size(), kNoGate);
  std::vector<Gate> kept;
  for (size_t g = 0; g < s.gates.size(); ++g) {
    if (s.gates[g].pieces == 0) continue;
    renum[g] = static_cast<uint32_t>(kept.size());
    kept.push_back(s.gates[g]);
  }
  s.gates = std::move(kept);
  std::vector<UnitDep> deps;
  deps.reserve(s.deps.size());
  for (Unit& u : s.units) {
    const uint32_t b = static_cast<uint32_t>(deps.size());
    for (uint32_t i = u.depBegin; i < u.depEnd; ++i) {
      UnitDep d = s.deps[i];
      if (d.kind == DepKind::kGate) {
        if (renum[d.id] == kNoGate) continue;
        d.id = renum[d.id];
      }
      deps.push_back(d);
    }
    u.depBegin = b;
    u.depEnd = static_cast<uint32_t>(deps.size());
    for (uint32_t& g : u.gates)
      if (g != kNoGate) g = renum[g];
  }
  s.deps = std::move(deps);
  return s;
}

}  // namespace tide::plan
