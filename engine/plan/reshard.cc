#include "engine/plan/reshard.h"

#include <algorithm>
#include <string>

namespace tide::plan {

namespace {

struct Held {
  RegionBox box;
  uint32_t rank;
};

bool boxLess(const RegionBox& a, const RegionBox& b) {
  if (a.lo != b.lo) return a.lo < b.lo;
  return a.hi < b.hi;
}

// Groups of replicas: [begin, end) ranges of equal boxes in a sorted list.
std::vector<std::pair<size_t, size_t>> groups(std::vector<Held>& v) {
  std::sort(v.begin(), v.end(), [](const Held& a, const Held& b) {
    if (!(a.box == b.box)) return boxLess(a.box, b.box);
    return a.rank < b.rank;
  });
  std::vector<std::pair<size_t, size_t>> g;
  for (size_t i = 0; i < v.size();) {
    size_t j = i + 1;
    while (j < v.size() && v[j].box == v[i].box) ++j;
    g.emplace_back(i, j);
    i = j;
  }
  return g;
}

}  // namespace

Result<std::vector<RankInfo>> placeRanks(int nt, int ni, const Placement& placement) {
  const int g = placement.gpusPerNode;
  if (nt <= 0 || ni <= 0 || g <= 0) {
    return TIDE_ERROR(Code::kInvalidArgument, "plan: world sizes and GPUs per node must be > 0");
  }
  if (placement.colocated && nt != ni) {
    return TIDE_ERROR(Code::kInvalidArgument,
                      "plan: colocated placement needs as many inference as training ranks (" +
                          std::to_string(ni) + " vs " + std::to_string(nt) + ")");
  }
  const int first = placement.colocated            ? 0
                    : placement.inferFirstGpu >= 0 ? placement.inferFirstGpu
                                                   : (nt + g - 1) / g * g;
  if (!placement.colocated && first < nt) {
    return TIDE_ERROR(Code::kInvalidArgument,
                      "plan: inference GPUs start at " + std::to_string(first) +
                          ", inside the training ranks' GPUs 0-" + std::to_string(nt - 1));
  }
  std::vector<RankInfo> ranks;
  ranks.reserve(static_cast<size_t>(nt) + ni);
  for (int r = 0; r < nt; ++r) {
    ranks.push_back(RankInfo{static_cast<uint32_t>(r), Role::kTrainer, static_cast<uint32_t>(r / g),
                             static_cast<uint32_t>(r % g)});
  }
  for (int r = 0; r < ni; ++r) {
    const int gpu = first + r;
    ranks.push_back(RankInfo{static_cast<uint32_t>(nt + r), Role::kInference,
                             static_cast<uint32_t>(gpu / g), static_cast<uint32_t>(gpu % g)});
  }
  return ranks;
}

Result<TransferPlan> basePlan(const workloads::ModelInventory& inv,
                              const workloads::TrainLayout& train,
                              const workloads::InferLayout& infer, const Placement& placement) {
  const int nt = train.worldSize();
  const int ni = infer.worldSize();
  TransferPlan p;
  TIDE_ASSIGN_OR_RETURN(p.ranks, placeRanks(nt, ni, placement));
  p.tensors.reserve(inv.tensors.size());
  for (size_t t = 0; t < inv.tensors.size(); ++t) {
    const auto& s = inv.tensors[t];
    if (s.shape.size() > static_cast<size_t>(kMaxDims)) {
      return TIDE_ERROR(Code::kInvalidArgument,
                        "plan: tensor " + s.name + " has more than 4 dimensions");
    }
    p.tensors.push_back(TensorInfo{static_cast<uint32_t>(t), s.name, s.shape, s.trainDtype,
                                   s.inferDtype, s.fp8Block});
  }
  // A rank's non-empty shards as holdings (rank filled in by the caller).
  auto holdingsOf = [&](const std::vector<workloads::Shard>& shards,
                        Space space) -> Result<std::vector<Holding>> {
    std::vector<Holding> out;
    out.reserve(shards.size());
    for (const auto& sh : shards) {
      TIDE_ASSIGN_OR_RETURN(RegionBox b, RegionBox::from(sh.box));
      if (b.empty()) continue;
      const auto& t = inv.tensors[sh.tensor];
      out.push_back(
          Holding{0, space, sh.tensor, b, space == Space::kTrain ? t.trainDtype : t.inferDtype});
    }
    return out;
  };
  for (int r = 0; r < nt; ++r) {
    TIDE_ASSIGN_OR_RETURN(auto hs,
                          holdingsOf(workloads::trainShards(inv, train, r), Space::kTrain));
    for (auto& h : hs) h.rank = static_cast<uint32_t>(r);
    p.holdings.insert(p.holdings.end(), hs.begin(), hs.end());
  }
  // An inference rank's shards depend only on its rank within the engine
  // (engines are identical): computed once per engine-local rank, not per
  // rank, which at 16,384 GPUs was most of the base plan's time.
  const int perEngine = std::min(infer.tp, ni);
  std::vector<std::vector<Holding>> local(static_cast<size_t>(perEngine));
  size_t perEngineHoldings = 0;
  for (int l = 0; l < perEngine; ++l) {
    TIDE_ASSIGN_OR_RETURN(local[l],
                          holdingsOf(workloads::inferShards(inv, infer, l), Space::kInfer));
    perEngineHoldings += local[l].size();
  }
  p.holdings.reserve(p.holdings.size() + perEngineHoldings * static_cast<size_t>(infer.engines));
  for (int r = 0; r < ni; ++r) {
    for (Holding h : local[static_cast<size_t>(r % perEngine)]) {
      h.rank = static_cast<uint32_t>(nt + r);
      p.holdings.push_back(h);
    }
  }
  return p;
}

int nodesNeeded(const TransferPlan& base, int gpusPerNode) {
  uint32_t maxNode = 0;
  for (const auto& r : base.ranks) maxNode = std::max(maxNode, r.node);
  (void)gpusPerNode;
  return base.ranks.empty() ? 0 : static_cast<int>(maxNode) + 1;
}

Result<Reshard> planReshard(const TransferPlan& base) {
  const size_t nt = base.tensors.size();
  std::vector<std::vector<Held>> train(nt), infer(nt);
  for (const auto& h : base.holdings) {
    if (h.space == Space::kTrain) train[h.tensor].push_back(Held{h.box, h.rank});
    if (h.space == Space::kInfer) infer[h.tensor].push_back(Held{h.box, h.rank});
  }
  Reshard out;
  for (size_t t = 0; t < nt; ++t) {
    if (infer[t].empty()) continue;
    const std::string& name = base.tensors[t].name;
    if (train[t].empty()) {
      return TIDE_ERROR(Code::kFailedPrecondition, "reshard: tensor " + name +
                                                       " is needed by inference but held by no "
                                                       "training rank");
    }
    const auto tg = groups(train[t]);
    const auto ig = groups(infer[t]);
    // Distinct training boxes must not overlap: a byte would have two owners
    // that may disagree.
    for (size_t a = 0; a < tg.size(); ++a) {
      const RegionBox& ba = train[t][tg[a].first].box;
      for (size_t b = a + 1; b < tg.size(); ++b) {
        const RegionBox& bb = train[t][tg[b].first].box;
        if (ba.ndim > 0 && bb.lo[0] >= ba.hi[0]) break;  // sorted by lo: no later overlap
        if (ba.overlaps(bb)) {
          return TIDE_ERROR(Code::kFailedPrecondition, "reshard: training shards of " + name +
                                                           " overlap partially: " + ba.toString() +
                                                           " and " + bb.toString());
        }
      }
    }
    // Source lists are shared by all pieces cut from the same training box.
    std::vector<uint32_t> srcBegin(tg.size());
    for (size_t a = 0; a < tg.size(); ++a) {
      srcBegin[a] = static_cast<uint32_t>(out.sources.size());
      for (size_t k = tg[a].first; k < tg[a].second; ++k) out.sources.push_back(train[t][k].rank);
    }
    for (const auto& [ib, ie] : ig) {
      const RegionBox& target = infer[t][ib].box;
      const auto dstBegin = static_cast<uint32_t>(out.targets.size());
      for (size_t k = ib; k < ie; ++k) out.targets.push_back(infer[t][k].rank);
      const auto dstEnd = static_cast<uint32_t>(out.targets.size());
      uint64_t covered = 0;
      for (size_t a = 0; a < tg.size(); ++a) {
        RegionBox cut;
        if (!intersect(target, train[t][tg[a].first].box, &cut)) continue;
        covered += cut.volume();
        out.pieces.push_back(Piece{static_cast<uint32_t>(t), cut, srcBegin[a],
                                   srcBegin[a] + static_cast<uint32_t>(tg[a].second - tg[a].first),
                                   dstBegin, dstEnd});
      }
      if (covered != target.volume()) {
        return TIDE_ERROR(Code::kFailedPrecondition,
                          "reshard: inference shard " + target.toString() + " of " + name +
                              " (rank " + std::to_string(infer[t][ib].rank) +
                              "): training ranks "
                              "hold " +
                              std::to_string(covered) + " of its " +
                              std::to_string(target.volume()) + " elements");
      }
    }
  }
  return out;
}

}  // namespace tide::plan
