#pragma once
// The buffers each rank of a plan allocates and registers once, before any
// update: one per space it holds (its training shard, staging replica,
// inference shard, and the packed buckets it packs, relays or receives).
// The real executor lays its memory out by these (engine/exec/executor/rank_layout.h);
// a strategy counts the pages its register steps pin from them.

#include <array>
#include <cstdint>
#include <set>
#include <vector>

#include "engine/plan/transfer_plan.h"

namespace tide::plan {

inline constexpr int kSpaces = 4;

// Per rank, the buckets it holds a copy of: it packs them, or a move
// reads or writes them.
std::vector<std::set<uint32_t>> bucketsHeldBy(const TransferPlan& p);

struct RankBuffers {
  std::array<uint64_t, kSpaces> bytes{};  // by Space
  uint64_t total() const;
  // Pages registered: each space's buffer is its own registration.
  uint64_t pages(uint64_t pageBytes) const;
};
// Per rank. References are not checked here (TransferPlan::validate does).
std::vector<RankBuffers> rankBuffers(const TransferPlan& p);

}  // namespace tide::plan
