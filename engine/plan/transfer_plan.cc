#include "engine/plan/transfer_plan.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>

namespace tide::plan {

const char* roleName(Role r) {
  switch (r) {
    case Role::kTrainer:
      return "trainer";
    case Role::kInference:
      return "inference";
    case Role::kStore:
      return "store";
  }
  return "?";
}

const char* spaceName(Space s) {
  switch (s) {
    case Space::kTrain:
      return "train";
    case Space::kStaging:
      return "staging";
    case Space::kInfer:
      return "infer";
    case Space::kBucket:
      return "bucket";
  }
  return "?";
}

const char* moveKindName(MoveKind k) {
  switch (k) {
    case MoveKind::kWrite:
      return "write";
    case MoveKind::kGather:
      return "gather";
    case MoveKind::kBroadcastHop:
      return "broadcast_hop";
    case MoveKind::kConvert:
      return "convert";
  }
  return "?";
}

const char* pathName(Path p) {
  switch (p) {
    case Path::kLocal:
      return "local";
    case Path::kIntraNode:
      return "intra_node";
    case Path::kNetwork:
      return "network";
  }
  return "?";
}

namespace {

uint64_t ceilDiv(uint64_t a, uint64_t b) {
  return (a + b - 1) / b;
}

// Number of block-scale tiles a box touches: tiles span the last two dims.
uint64_t touchedBlocks(const RegionBox& box, uint32_t block) {
  if (box.empty()) return 0;
  uint64_t n = 1;
  for (int i = 0; i < box.ndim; ++i) {
    if (i >= box.ndim - 2) {
      n *= ceilDiv(box.hi[i], block) - box.lo[i] / block;
    } else {
      n *= box.hi[i] - box.lo[i];
    }
  }
  return n;
}

std::string where(size_t i, const Move& m) {
  return "move " + std::to_string(i) + " (" + std::to_string(m.src) + "->" + std::to_string(m.dst) +
         ", tensor " +
         (m.tensor == kWholeBucket ? std::string("bucket") : std::to_string(m.tensor)) + " " +
         m.box.toString() + ")";
}

}  // namespace

Path TransferPlan::pathBetween(uint32_t a, uint32_t b) const {
  if (a == b) return Path::kLocal;
  return ranks[a].node == ranks[b].node ? Path::kIntraNode : Path::kNetwork;
}

uint64_t TransferPlan::regionBytes(uint32_t tensor, const RegionBox& box,
                                   workloads::DType dtype) const {
  uint64_t bytes = box.volume() * workloads::bytesOf(dtype);
  if (dtype == workloads::DType::kFP8E4M3 && tensor < tensors.size() &&
      tensors[tensor].fp8Block > 0) {
    bytes += touchedBlocks(box, tensors[tensor].fp8Block) * 4;
  }
  return bytes;
}

Move& TransferPlan::addMove(Move m) {
  m.path = pathBetween(m.src, m.dst);
  m.bytes =
      m.tensor == kWholeBucket ? buckets[m.bucket].bytes : regionBytes(m.tensor, m.box, m.dstDtype);
  moves.push_back(m);
  return moves.back();
}

uint32_t TransferPlan::addStage(std::string name, std::vector<Dependency> deps) {
  const auto id = static_cast<uint32_t>(stages.size());
  stages.push_back(Stage{id, std::move(name), std::move(deps)});
  return id;
}

Status TransferPlan::validate() const {
  auto bad = [](const std::string& why) {
    return TIDE_ERROR(Code::kInvalidArgument, "invalid plan: " + why);
  };
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i].id != i) return bad("rank ids must be 0..n-1 in order");
  }
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& t = tensors[i];
    if (t.id != i) return bad("tensor ids must be 0..n-1 in order");
    if (t.shape.size() > static_cast<size_t>(kMaxDims)) {
      return bad("tensor " + t.name + " has more than " + std::to_string(kMaxDims) + " dims");
    }
    for (uint64_t d : t.shape) {
      if (d > kMaxCoord) return bad("tensor " + t.name + " has a dimension of 2^32 or more");
    }
  }
  auto inTensor = [&](uint32_t tensor, const RegionBox& b) {
    const auto& shape = tensors[tensor].shape;
    if (b.ndim != shape.size()) return false;
    for (int d = 0; d < b.ndim; ++d) {
      if (b.lo[d] >= b.hi[d] || b.hi[d] > shape[d]) return false;
    }
    return true;
  };
  // Holdings per (rank, space, tensor), for containment checks.
  auto key = [](uint32_t rank, Space s, uint32_t tensor) {
    return (static_cast<uint64_t>(rank) << 34) | (static_cast<uint64_t>(s) << 32) | tensor;
  };
  // Sorted (key, holding) index instead of a hash map of vectors: plans hold
  // up to millions of holdings and this keeps validation allocation-light.
  std::vector<std::pair<uint64_t, uint32_t>> held;
  held.reserve(holdings.size());
  for (size_t i = 0; i < holdings.size(); ++i) {
    const auto& h = holdings[i];
    if (h.rank >= ranks.size()) return bad("holding on unknown rank " + std::to_string(h.rank));
    if (h.tensor >= tensors.size() || !inTensor(h.tensor, h.box)) {
      return bad("holding of rank " + std::to_string(h.rank) +
                 " is outside its tensor: " + h.box.toString());
    }
    if (h.space == Space::kBucket) return bad("holdings cannot be in bucket space");
    held.emplace_back(key(h.rank, h.space, h.tensor), static_cast<uint32_t>(i));
  }
  std::sort(held.begin(), held.end());
  // Each rank's range of the index: a look-up searches its rank's few
  // thousand entries, not the whole plan's tens of millions.
  std::vector<size_t> rankBegin(ranks.size() + 1, held.size());
  for (size_t i = held.size(); i-- > 0;) rankBegin[held[i].first >> 34] = i;
  for (size_t r = ranks.size(); r-- > 0;) rankBegin[r] = std::min(rankBegin[r], rankBegin[r + 1]);
  auto isHeld = [&](uint32_t rank, Space s, uint32_t tensor, const RegionBox& b) {
    const uint64_t k = key(rank, s, tensor);
    const auto end = held.begin() + static_cast<std::ptrdiff_t>(rankBegin[rank + 1]);
    auto it = std::lower_bound(held.begin() + static_cast<std::ptrdiff_t>(rankBegin[rank]), end,
                               std::make_pair(k, uint32_t{0}));
    for (; it != end && it->first == k; ++it) {
      if (holdings[it->second].box.contains(b)) return true;
    }
    return false;
  };
  for (const auto& b : buckets) {
    if (b.id >= buckets.size() || &buckets[b.id] != &b) return bad("bucket ids must be 0..n-1");
    if (b.owner >= ranks.size()) return bad("bucket " + std::to_string(b.id) + " owner unknown");
    if (b.stage >= stages.size()) return bad("bucket " + std::to_string(b.id) + " stage unknown");
    uint64_t bytes = 0;
    for (const auto& e : b.entries) {
      if (e.tensor >= tensors.size() || !inTensor(e.tensor, e.box)) {
        return bad("bucket " + std::to_string(b.id) + " entry outside its tensor");
      }
      bytes += regionBytes(e.tensor, e.box, e.dtype);
    }
    if (bytes != b.bytes) return bad("bucket " + std::to_string(b.id) + " bytes do not add up");
  }
  auto inBucket = [&](uint32_t bucket, uint32_t tensor, const RegionBox& box) {
    for (const auto& e : buckets[bucket].entries) {
      if (e.tensor == tensor && e.box.contains(box)) return true;
    }
    return false;
  };
  for (size_t i = 0; i < stages.size(); ++i) {
    if (stages[i].id != i) return bad("stage ids must be 0..n-1 in order");
    for (const auto& d : stages[i].deps) {
      if (d.stage >= i) {
        return bad("stage " + stages[i].name + " depends on a later stage (not a DAG order)");
      }
    }
  }
  // Inference-shard writes as (rank << 32 | tensor, first coordinate, move),
  // for the exactly-once check: 16 bytes a write, the box read from the move.
  struct Written {
    uint64_t key;
    Coord lo0;
    uint32_t move;
    bool operator<(const Written& o) const {
      return key != o.key ? key < o.key : lo0 != o.lo0 ? lo0 < o.lo0 : move < o.move;
    }
  };
  if (moves.size() > kMaxCoord) return bad("more than 2^32 - 1 moves");
  std::vector<Written> written;
  written.reserve(holdings.size());
  for (size_t i = 0; i < moves.size(); ++i) {
    const Move& m = moves[i];
    if (m.src >= ranks.size() || m.dst >= ranks.size()) return bad(where(i, m) + ": unknown rank");
    if (m.stage >= stages.size()) return bad(where(i, m) + ": unknown stage");
    if (m.path != pathBetween(m.src, m.dst)) return bad(where(i, m) + ": path does not match");
    if ((m.kind == MoveKind::kConvert) != (m.src == m.dst)) {
      return bad(where(i, m) + ": convert moves and only they stay on one rank");
    }
    const bool needsBucket =
        m.srcSpace == Space::kBucket || m.dstSpace == Space::kBucket || m.tensor == kWholeBucket;
    if (needsBucket && m.bucket >= buckets.size()) return bad(where(i, m) + ": unknown bucket");
    if (m.tensor == kWholeBucket) {
      if (m.srcSpace != Space::kBucket || m.dstSpace != Space::kBucket) {
        return bad(where(i, m) + ": a whole bucket moves between bucket buffers");
      }
      if (m.bytes != buckets[m.bucket].bytes) return bad(where(i, m) + ": bytes != bucket bytes");
      continue;
    }
    if (m.tensor >= tensors.size() || !inTensor(m.tensor, m.box)) {
      return bad(where(i, m) + ": box outside its tensor");
    }
    if (m.bytes != regionBytes(m.tensor, m.box, m.dstDtype)) {
      return bad(where(i, m) + ": bytes do not match box and dtype");
    }
    if (m.srcSpace == Space::kBucket ? !inBucket(m.bucket, m.tensor, m.box)
                                     : !isHeld(m.src, m.srcSpace, m.tensor, m.box)) {
      return bad(where(i, m) + ": source does not hold the region in " + spaceName(m.srcSpace));
    }
    if (m.dstSpace == Space::kBucket ? !inBucket(m.bucket, m.tensor, m.box)
                                     : !isHeld(m.dst, m.dstSpace, m.tensor, m.box)) {
      return bad(where(i, m) + ": destination has no " + spaceName(m.dstSpace) +
                 " buffer for the region");
    }
    if (m.dstSpace == Space::kInfer) {
      written.push_back(Written{(static_cast<uint64_t>(m.dst) << 32) | m.tensor,
                                m.box.ndim > 0 ? m.box.lo[0] : 0, static_cast<uint32_t>(i)});
    }
  }
  // Every inference byte exactly once: writes are pairwise disjoint and their
  // volume equals the holdings' volume.
  std::vector<std::pair<uint64_t, uint64_t>> need;  // (rank << 32 | tensor, elements)
  for (const auto& h : holdings) {
    if (h.space == Space::kInfer) {
      need.emplace_back((static_cast<uint64_t>(h.rank) << 32) | h.tensor, h.box.volume());
    }
  }
  std::sort(need.begin(), need.end());
  std::sort(written.begin(), written.end());
  auto name = [&](uint64_t k) {
    return "inference rank " + std::to_string(k >> 32) + " tensor " + tensors[k & 0xffffffffu].name;
  };
  size_t w = 0, n = 0;
  while (w < written.size() || n < need.size()) {
    // The next (rank, tensor) key present in either list.
    uint64_t k = UINT64_MAX;
    if (w < written.size()) k = written[w].key;
    if (n < need.size()) k = std::min(k, need[n].first);
    uint64_t want = 0, vol = 0;
    for (; n < need.size() && need[n].first == k; ++n) want += need[n].second;
    const size_t begin = w;
    while (w < written.size() && written[w].key == k) ++w;
    for (size_t a = begin; a < w; ++a) {
      const RegionBox& ba = moves[written[a].move].box;
      vol += ba.volume();
      for (size_t b = a + 1; b < w; ++b) {
        const RegionBox& bb = moves[written[b].move].box;
        if (ba.ndim > 0 && bb.lo[0] >= ba.hi[0]) break;  // sorted on dim 0
        if (ba.overlaps(bb)) {
          return bad(name(k) + ": " + ba.toString() + " and " + bb.toString() +
                     " are both written (a byte twice)");
        }
      }
    }
    if (vol == 0 && want > 0) {
      return bad(name(k) + ": never written (0 of " + std::to_string(want) + " elements)");
    }
    if (vol != want) {
      return bad(name(k) + ": " + std::to_string(vol) + " of " + std::to_string(want) +
                 " elements written");
    }
  }
  return work.validate(ranks.size());
}

PlanSummary TransferPlan::summarize() const {
  PlanSummary s;
  s.sentBytes.assign(ranks.size(), 0);
  s.receivedBytes.assign(ranks.size(), 0);
  for (const auto& m : moves) {
    ++s.moves;
    s.totalBytes += m.bytes;
    s.bytesByKind[static_cast<int>(m.kind)] += m.bytes;
    s.movesByKind[static_cast<int>(m.kind)] += 1;
    s.bytesByPath[static_cast<int>(m.path)] += m.bytes;
    if (m.path != Path::kLocal) {
      s.sentBytes[m.src] += m.bytes;
      s.receivedBytes[m.dst] += m.bytes;
    }
  }
  return s;
}

}  // namespace tide::plan
