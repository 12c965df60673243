#pragma once
// Schedule: a TransferPlan's moves lowered once into numbered units per rank
// with explicit dependencies. The real executor performs exactly these units
// (engine/exec/executor/rank_schedule.h adds each unit's addresses) and the
// simulator prices exactly these (sim/plan_lowering.h; it may merge units
// for speed, never re-derive them). The rules that turn a plan's stages,
// buckets and chains into units live here and nowhere else:
//
//  * grouping: a rank's non-local moves of one (stage, bucket) to one peer
//    are one unit, a batch of one-sided writes whose last request carries an
//    immediate naming the unit at the peer; its local moves of one (stage,
//    bucket) are one unit of copies and conversions;
//  * chunking: a broadcast hop of a bucket is one unit of `pieces` chunks of
//    the plan's chunk size (PlanOptions::chunkBytes), sent in order;
//  * dependencies: a unit of (stage s, bucket b) on rank r waits for a gate
//    per dependency of s: everything that lands at r for that stage (for
//    bucket b where the dependency is per bucket, else the whole stage);
//    piece k of a hop also waits for piece k of the hop into its sender,
//    which is how a chain pipelines.
//
// Every rank numbers units identically because it builds the same schedule
// from the same plan. Plain data, no addresses.

#include <cstdint>
#include <vector>

#include "engine/core/status.h"
#include "engine/plan/transfer_plan.h"

namespace tide::plan {

enum class UnitKind : uint8_t {
  kWrite,  // one-sided writes of one (stage, bucket) to one peer, one batch
  kHop,    // a broadcast hop of one bucket to the next rank of its chain, in pieces
  kLocal,  // a rank's local copies and conversions of one (stage, bucket)
};
const char* unitKindName(UnitKind k);

inline constexpr uint32_t kNoGate = 0xffffffffu;
inline constexpr uint32_t kAllBuckets = 0xffffffffu;

enum class DepKind : uint8_t {
  kGate,       // every unit counted to gate `id` has landed
  kSamePiece,  // piece k of unit `id` has landed (for piece k of this unit)
};
struct UnitDep {
  DepKind kind = DepKind::kGate;
  uint32_t id = 0;
};

// What lands at `rank` for (stage, bucket), or for the whole stage
// (bucket kAllBuckets): the units that count to it, in pieces. Only gates
// some unit waits for exist, and none that is empty.
struct Gate {
  uint32_t rank = 0;
  uint32_t stage = 0;
  uint32_t bucket = kAllBuckets;
  uint32_t pieces = 0;
};

struct Unit {
  UnitKind kind = UnitKind::kWrite;
  MoveKind moveKind = MoveKind::kWrite;  // of its moves (one kind per unit)
  uint32_t rank = 0;                     // who performs it
  uint32_t peer = 0;                     // where its bytes land (rank itself for kLocal)
  uint32_t stage = 0;
  uint32_t bucket = 0;
  uint32_t pieces = 1;      // kHop: chunks of the bucket; else 1
  uint32_t slot = 0;        // non-local: number of its first piece among the peer's arrivals
  uint64_t bytes = 0;       // delivered at peer, all pieces
  uint64_t pieceBytes = 0;  // kHop: bytes of each piece but the last
  Space srcSpace = Space::kTrain;
  Space dstSpace = Space::kInfer;
  bool converts = false;                // a move changes the dtype (a quantization pass)
  uint32_t moveBegin = 0, moveEnd = 0;  // range in Schedule::moves
  uint32_t depBegin = 0, depEnd = 0;    // range in Schedule::deps
  // The gates it counts to when it lands: per bucket, whole stage.
  uint32_t gates[2] = {kNoGate, kNoGate};

  bool local() const { return kind == UnitKind::kLocal; }
  uint64_t bytesOfPiece(uint32_t k) const {
    if (kind != UnitKind::kHop) return bytes;
    return k + 1 < pieces ? pieceBytes : bytes - pieceBytes * (pieces - 1);
  }
  // "write", "gather", "broadcast_hop", "copy", "convert": what a timeline names it.
  const char* name() const;
};

struct Schedule {
  std::vector<Unit> units;      // in plan order: each rank performs its own in this order
  std::vector<uint32_t> moves;  // plan move indices, by unit
  std::vector<UnitDep> deps;
  std::vector<Gate> gates;
  std::vector<std::vector<uint32_t>> unitsOf;  // per rank: the units it performs
  // Per rank: its arrivals by slot (unit id, piece): what the immediates name.
  struct Arrival {
    uint32_t unit = 0;
    uint32_t piece = 0;
  };
  std::vector<std::vector<Arrival>> arrivals;
  uint64_t chunkBytes = 0;  // the plan's (PlanOptions::chunkBytes)
  uint64_t pieces = 0;      // sum over units

  // Fails on a plan whose hops repeat a (bucket, sender, receiver) or whose
  // units would mix spaces; the plan must be valid.
  static Result<Schedule> build(const TransferPlan& p);

  // The dependencies of unit `u`.
  const UnitDep* depsBegin(const Unit& u) const { return deps.data() + u.depBegin; }
  const UnitDep* depsEnd(const Unit& u) const { return deps.data() + u.depEnd; }
};

}  // namespace tide::plan
