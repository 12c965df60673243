#include "engine/plan/transfer_plan.h"

#include <algorithm>
#include <string>
#include <unordered_map>

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
  std::unordered_map<uint64_t, std::vector<const Holding*>> held;
  held.reserve(holdings.size());
  for (const auto& h : holdings) {
    if (h.rank >= ranks.size()) return bad("holding on unknown rank " + std::to_string(h.rank));
    if (h.tensor >= tensors.size() || !inTensor(h.tensor, h.box)) {
      return bad("holding of rank " + std::to_string(h.rank) +
                 " is outside its tensor: " + h.box.toString());
    }
    if (h.space == Space::kBucket) return bad("holdings cannot be in bucket space");
    held[key(h.rank, h.space, h.tensor)].push_back(&h);
  }
  auto isHeld = [&](uint32_t rank, Space s, uint32_t tensor, const RegionBox& b) {
    auto it = held.find(key(rank, s, tensor));
    if (it == held.end()) return false;
    return std::any_of(it->second.begin(), it->second.end(),
                       [&](const Holding* h) { return h->box.contains(b); });
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
  // Inference-shard writes, grouped per (rank, tensor), for the exactly-once check.
  std::unordered_map<uint64_t, std::vector<RegionBox>> written;
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
      written[(static_cast<uint64_t>(m.dst) << 32) | m.tensor].push_back(m.box);
    }
  }
  // Every inference byte exactly once: writes are pairwise disjoint and their
  // volume equals the holdings' volume.
  std::unordered_map<uint64_t, uint64_t> need;
  for (const auto& h : holdings) {
    if (h.space == Space::kInfer) {
      need[(static_cast<uint64_t>(h.rank) << 32) | h.tensor] += h.box.volume();
    }
  }
  for (auto& [k, boxes] : written) {
    std::sort(boxes.begin(), boxes.end(),
              [](const RegionBox& a, const RegionBox& b) { return a.lo < b.lo; });
    uint64_t vol = 0;
    for (size_t a = 0; a < boxes.size(); ++a) {
      vol += boxes[a].volume();
      for (size_t b = a + 1; b < boxes.size(); ++b) {
        if (boxes[a].ndim > 0 && boxes[b].lo[0] >= boxes[a].hi[0]) break;  // sorted on dim 0
        if (boxes[a].overlaps(boxes[b])) {
          return bad("inference rank " + std::to_string(k >> 32) + " tensor " +
                     tensors[k & 0xffffffffu].name + ": " + boxes[a].toString() + " and " +
                     boxes[b].toString() + " are both written (a byte twice)");
        }
      }
    }
    const uint64_t want = need.count(k) ? need[k] : 0;
    if (vol != want) {
      return bad("inference rank " + std::to_string(k >> 32) + " tensor " +
                 tensors[k & 0xffffffffu].name + ": " + std::to_string(vol) + " of " +
                 std::to_string(want) + " elements written");
    }
  }
  for (const auto& [k, want] : need) {
    if (want > 0 && !written.count(k)) {
      return bad("inference rank " + std::to_string(k >> 32) + " tensor " +
                 tensors[k & 0xffffffffu].name + ": never written (0 of " + std::to_string(want) +
                 " elements)");
    }
  }
  return Status::ok();
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
