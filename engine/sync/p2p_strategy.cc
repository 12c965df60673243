#include "engine/sync/p2p_strategy.h"

#include <algorithm>
#include <string>
#include <unordered_map>

#include "engine/sync/p2p_assignment.h"
#include "engine/sync/register_steps.h"

namespace tide::sync {

using plan::Holding;
using plan::Move;
using plan::MoveKind;
using plan::RegionBox;
using plan::Space;

std::vector<uint32_t> tensorBuckets(const plan::TransferPlan& base, uint64_t bucketBytes) {
  std::vector<uint32_t> bucket(base.tensors.size());
  uint64_t filled = 0;
  uint32_t b = 0;
  for (size_t t = 0; t < base.tensors.size(); ++t) {
    const auto& ti = base.tensors[t];
    uint64_t n = 1;
    for (auto d : ti.shape) n *= d;
    const uint64_t bytes = n * workloads::bytesOf(ti.trainDtype);
    if (filled > 0 && filled + bytes > bucketBytes) {
      ++b;
      filled = 0;
    }
    bucket[t] = b;
    filled += bytes;
  }
  return bucket;
}

namespace {

// Widens a box to whole FP8 blocks on its last two dims, within `shape`.
RegionBox widenToBlocks(RegionBox b, const std::vector<uint64_t>& shape, uint32_t block) {
  for (int d = std::max(0, b.ndim - 2); d < b.ndim; ++d) {
    b.lo[d] = b.lo[d] / block * block;
    b.hi[d] = std::min<uint64_t>(shape[d], (b.hi[d] + block - 1) / block * block);
  }
  return b;
}

RegionBox boundingBox(const RegionBox& a, const RegionBox& b) {
  RegionBox r = a;
  for (int d = 0; d < a.ndim; ++d) {
    r.lo[d] = std::min(a.lo[d], b.lo[d]);
    r.hi[d] = std::max(a.hi[d], b.hi[d]);
  }
  return r;
}

}  // namespace

Result<plan::TransferPlan> P2pStrategy::makePlan(const SyncProblem& pr) const {
  if (!pr.base || !pr.reshard || !pr.cluster) {
    return TIDE_ERROR(Code::kInvalidArgument, "p2p: incomplete problem");
  }
  const auto& rs = *pr.reshard;
  TIDE_ASSIGN_OR_RETURN(Assignment asg,
                        assignSources(*pr.base, rs, *pr.cluster,
                                      pr.options.assignment == plan::Assignment::kRoundRobin));

  plan::TransferPlan p = startPlan(pr);
  p.strategy = "p2p";
  const uint32_t convert = p.addStage("convert");
  const uint32_t write = p.addStage("write", {plan::Dependency{convert, true}});
  const auto buckets = tensorBuckets(p, pr.options.bucketBytes);

  // Staging box per (sender, tensor): the bounding box of what it sends.
  std::unordered_map<uint64_t, RegionBox> staging;
  staging.reserve(rs.pieces.size());
  std::vector<uint32_t> senders;  // a piece's distinct senders: one map update each
  for (size_t i = 0; i < rs.pieces.size(); ++i) {
    const auto& piece = rs.pieces[i];
    senders.assign(asg.source.begin() + asg.pairBegin[i],
                   asg.source.begin() + asg.pairBegin[i + 1]);
    std::sort(senders.begin(), senders.end());
    senders.erase(std::unique(senders.begin(), senders.end()), senders.end());
    for (uint32_t src : senders) {
      const uint64_t key = (static_cast<uint64_t>(src) << 32) | piece.tensor;
      auto [it, fresh] = staging.try_emplace(key, piece.box);
      if (!fresh) it->second = boundingBox(it->second, piece.box);
    }
  }
  // Training shard per (rank, tensor), to check the widened staging box.
  std::unordered_map<uint64_t, RegionBox> shard;
  for (const auto& h : p.holdings) {
    if (h.space == Space::kTrain) shard[(static_cast<uint64_t>(h.rank) << 32) | h.tensor] = h.box;
  }
  std::vector<std::pair<uint64_t, RegionBox>> ordered(staging.begin(), staging.end());
  p.moves.reserve(ordered.size() + asg.source.size());
  p.holdings.reserve(p.holdings.size() + ordered.size());
  std::sort(ordered.begin(), ordered.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [key, box] : ordered) {
    const auto rank = static_cast<uint32_t>(key >> 32);
    const auto tensor = static_cast<uint32_t>(key & 0xffffffffu);
    const auto& ti = p.tensors[tensor];
    if (ti.inferDtype == workloads::DType::kFP8E4M3 && ti.fp8Block > 0) {
      box = widenToBlocks(box, ti.shape, ti.fp8Block);
      // A sender can only compute a block's scale if it holds the whole block.
      if (!shard[key].contains(box)) {
        return TIDE_ERROR(Code::kFailedPrecondition,
                          "p2p: FP8 blocks of " + std::to_string(ti.fp8Block) + " cut the " +
                              "training shard " + shard[key].toString() + " of " + ti.name +
                              " (rank " + std::to_string(rank) + " would need " + box.toString() +
                              "); choose a block size that divides the shards");
      }
    }
    p.holdings.push_back(Holding{rank, Space::kStaging, tensor, box, ti.inferDtype});
    Move m;
    m.src = m.dst = rank;
    m.tensor = tensor;
    m.box = box;
    m.srcSpace = Space::kTrain;
    m.dstSpace = Space::kStaging;
    m.srcDtype = ti.trainDtype;
    m.dstDtype = ti.inferDtype;
    m.kind = MoveKind::kConvert;
    m.stage = convert;
    m.bucket = buckets[tensor];
    p.addMove(m);
  }
  for (size_t i = 0; i < rs.pieces.size(); ++i) {
    const auto& piece = rs.pieces[i];
    const auto dst = rs.targetsOf(piece);
    const auto dt = p.tensors[piece.tensor].inferDtype;
    for (uint32_t k = 0; k < dst.size(); ++k) {
      Move m;
      m.src = asg.source[asg.pairBegin[i] + k];
      m.dst = dst[k];
      m.tensor = piece.tensor;
      m.box = piece.box;
      m.srcSpace = Space::kStaging;
      m.dstSpace = Space::kInfer;
      m.srcDtype = m.dstDtype = dt;
      m.kind = MoveKind::kWrite;
      m.stage = write;
      m.bucket = buckets[piece.tensor];
      p.addMove(m);
    }
  }
  if (pr.options.firstUpdate) TIDE_RETURN_IF_ERROR(addRegisterSteps(p, pr.options.pageBytes));
  TIDE_RETURN_IF_ERROR(p.validate());
  return p;
}

}  // namespace tide::sync
