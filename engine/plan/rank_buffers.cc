#include "engine/plan/rank_buffers.h"

namespace tide::plan {

std::vector<std::set<uint32_t>> bucketsHeldBy(const TransferPlan& p) {
  std::vector<std::set<uint32_t>> held(p.ranks.size());
  for (const auto& b : p.buckets)
    if (b.owner < held.size()) held[b.owner].insert(b.id);
  for (const auto& m : p.moves) {
    if (m.srcSpace == Space::kBucket && m.src < held.size()) held[m.src].insert(m.bucket);
    if (m.dstSpace == Space::kBucket && m.dst < held.size()) held[m.dst].insert(m.bucket);
  }
  return held;
}

uint64_t RankBuffers::total() const {
  uint64_t t = 0;
  for (uint64_t b : bytes) t += b;
  return t;
}

uint64_t RankBuffers::pages(uint64_t pageBytes) const {
  if (pageBytes == 0) return 0;
  uint64_t n = 0;
  for (uint64_t b : bytes) n += (b + pageBytes - 1) / pageBytes;
  return n;
}

std::vector<RankBuffers> rankBuffers(const TransferPlan& p) {
  std::vector<RankBuffers> out(p.ranks.size());
  for (const auto& h : p.holdings) {
    if (h.rank >= out.size() || h.space == Space::kBucket || h.tensor >= p.tensors.size()) continue;
    out[h.rank].bytes[static_cast<int>(h.space)] += p.regionBytes(h.tensor, h.box, h.dtype);
  }
  const auto held = bucketsHeldBy(p);
  for (size_t r = 0; r < out.size(); ++r) {
    for (uint32_t b : held[r]) {
      if (b >= p.buckets.size()) continue;
      for (const auto& e : p.buckets[b].entries) {
        if (e.tensor < p.tensors.size())
          out[r].bytes[static_cast<int>(Space::kBucket)] += p.regionBytes(e.tensor, e.box, e.dtype);
      }
    }
  }
  return out;
}

}  // namespace tide::plan
