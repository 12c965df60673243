#include "engine/sync/broadcast_strategy.h"

#include <algorithm>
#include <map>
#include <string>

#include "engine/sync/register_steps.h"

namespace tide::sync {

using plan::Bucket;
using plan::BucketEntry;
using plan::Move;
using plan::MoveKind;
using plan::RegionBox;
using plan::Space;

namespace {

struct Entry {
  uint32_t bucket;
  RegionBox box;
};

// Splits each tensor of one stage into bucket entries of at most
// `bucketBytes` (rows of dim 0; FP8 targets keep whole blocks per entry).
void packStage(plan::TransferPlan& p, const std::vector<uint32_t>& stageTensors, uint32_t head,
               uint32_t stage, uint64_t bucketBytes, std::vector<std::vector<Entry>>& entries) {
  auto open = [&]() {
    Bucket b;
    b.id = static_cast<uint32_t>(p.buckets.size());
    b.owner = head;
    b.stage = stage;
    p.buckets.push_back(std::move(b));
  };
  bool fresh = true;
  for (uint32_t t : stageTensors) {
    const auto& ti = p.tensors[t];
    RegionBox full;
    full.ndim = static_cast<uint8_t>(ti.shape.size());
    for (int d = 0; d < full.ndim; ++d) full.hi[d] = ti.shape[d];
    const uint64_t elemBytes = workloads::bytesOf(ti.trainDtype);
    const uint64_t rows = full.ndim ? ti.shape[0] : 1;
    const uint64_t rowBytes = rows ? full.volume() / rows * elemBytes : 0;
    uint64_t align = 1;
    if (ti.inferDtype == workloads::DType::kFP8E4M3 && ti.fp8Block > 0 && full.ndim <= 2) {
      align = ti.fp8Block;
    }
    uint64_t row = 0;
    while (row < rows || (full.ndim == 0 && row == 0)) {
      if (fresh) {
        open();
        fresh = false;
      }
      Bucket& b = p.buckets.back();
      const uint64_t room = b.bytes < bucketBytes ? bucketBytes - b.bytes : 0;
      uint64_t take = rowBytes ? room / rowBytes : rows;
      take = take / align * align;
      if (take == 0 && !b.entries.empty()) {  // full: next bucket
        fresh = true;
        continue;
      }
      take = std::clamp<uint64_t>(take, std::min<uint64_t>(align, rows - row), rows - row);
      RegionBox box = full;
      if (full.ndim) {
        box.lo[0] = row;
        box.hi[0] = row + take;
      }
      b.entries.push_back(BucketEntry{t, box, ti.trainDtype});
      b.bytes += p.regionBytes(t, box, ti.trainDtype);
      entries[t].push_back(Entry{b.id, box});
      row += full.ndim ? take : 1;
      if (b.bytes >= bucketBytes) fresh = true;
    }
  }
}

}  // namespace

Result<plan::TransferPlan> BroadcastStrategy::makePlan(const SyncProblem& pr) const {
  if (!pr.base || !pr.cluster || !pr.train) {
    return TIDE_ERROR(Code::kInvalidArgument, "broadcast: incomplete problem");
  }
  const auto nt = static_cast<uint32_t>(pr.train->worldSize());
  const auto pp = static_cast<uint32_t>(pr.train->pp);
  if (pp == 0 || nt % pp != 0) {
    return TIDE_ERROR(Code::kInvalidArgument, "broadcast: training ranks not divisible by PP");
  }
  const uint32_t perStage = nt / pp;
  const int channels = pr.options.channels > 0 ? pr.options.channels : pr.cluster->nicsPerNode;
  if (pr.options.bucketBytes == 0 || pr.options.chunkBytes == 0 || channels <= 0) {
    return TIDE_ERROR(Code::kInvalidArgument, "broadcast: bucket, chunk and channels must be > 0");
  }

  plan::TransferPlan p = startPlan(pr);
  // Read only below: no holding is added, so pointers into it stay valid.
  const plan::TransferPlan& base = p;
  p.strategy = "broadcast";

  // Holders per tensor, grouped by box (replicas hold equal boxes).
  const size_t numTensors = base.tensors.size();
  std::vector<
      std::map<std::pair<decltype(RegionBox::lo), decltype(RegionBox::hi)>, std::vector<uint32_t>>>
      holders(numTensors);
  std::vector<int64_t> tensorStage(numTensors, -1);
  for (const auto& h : base.holdings) {
    if (h.space != Space::kTrain) continue;
    const int64_t s = h.rank / perStage;
    if (tensorStage[h.tensor] >= 0 && tensorStage[h.tensor] != s) {
      return TIDE_ERROR(
          Code::kFailedPrecondition,
          "broadcast: tensor " + base.tensors[h.tensor].name + " is held by two pipeline stages");
    }
    tensorStage[h.tensor] = s;
    holders[h.tensor][{h.box.lo, h.box.hi}].push_back(h.rank);
  }
  // Inference ranks per node, in GPU order: the chain visits nodes in order.
  std::map<uint32_t, std::vector<uint32_t>> inferByNode;
  std::vector<std::vector<const plan::Holding*>> inferHold(numTensors);
  for (const auto& r : base.ranks) {
    if (r.role == plan::Role::kInference) inferByNode[r.node].push_back(r.id);
  }
  for (auto& [node, v] : inferByNode) {
    std::sort(v.begin(), v.end(),
              [&](uint32_t a, uint32_t b) { return base.ranks[a].gpu < base.ranks[b].gpu; });
  }
  for (const auto& h : base.holdings) {
    if (h.space == Space::kInfer) inferHold[h.tensor].push_back(&h);
  }
  for (size_t t = 0; t < numTensors; ++t) {
    if (!inferHold[t].empty() && tensorStage[t] < 0) {
      return TIDE_ERROR(Code::kFailedPrecondition,
                        "broadcast: tensor " + base.tensors[t].name + " has no training holder");
    }
  }

  // Rough size, so that a vector of a million moves is not regrown: one keep
  // move per inference shard, a gather per training piece, and a hop per
  // inference rank and bucket (buckets: the model over the bucket size).
  uint64_t trainBytes = 0;
  for (const auto& t : base.tensors) {
    uint64_t n = 1;
    for (uint64_t d : t.shape) n *= d;
    trainBytes += n * workloads::bytesOf(t.trainDtype);
  }
  size_t inferRanks = 0;
  for (const auto& [node, v] : inferByNode) inferRanks += v.size();
  // A bucket holds at least one tensor, so there are no more than tensors.
  const size_t estBuckets =
      std::min<uint64_t>(trainBytes / pr.options.bucketBytes, numTensors) + pp;
  p.moves.reserve(base.holdings.size() + estBuckets * inferRanks);
  std::vector<uint64_t> sent(base.ranks.size(), 0);
  std::vector<std::vector<Entry>> entries(numTensors);
  for (uint32_t s = 0; s < pp; ++s) {
    const uint32_t head = s * perStage;
    std::vector<uint32_t> stageTensors;
    for (uint32_t t = 0; t < numTensors; ++t) {
      if (tensorStage[t] == s && !inferHold[t].empty()) stageTensors.push_back(t);
    }
    const uint32_t gather = p.addStage("gather " + std::to_string(s));
    const uint32_t bcast =
        p.addStage("broadcast " + std::to_string(s), {plan::Dependency{gather, true}});
    const uint32_t keep = p.addStage("keep " + std::to_string(s), {plan::Dependency{bcast, true}});
    const size_t firstBucket = p.buckets.size();
    packStage(p, stageTensors, head, bcast, pr.options.bucketBytes, entries);

    // Gather: each entry's pieces from one holder each; the head's own data
    // is a local copy, otherwise prefer the head's node, then the least loaded.
    for (uint32_t t : stageTensors) {
      const auto& ti = p.tensors[t];
      for (const auto& e : entries[t]) {
        for (const auto& [key, ranks] : holders[t]) {
          RegionBox hb;
          hb.ndim = e.box.ndim;
          hb.lo = key.first;
          hb.hi = key.second;
          RegionBox cut;
          if (!plan::intersect(hb, e.box, &cut)) continue;
          uint32_t src = ranks[0];
          auto better = [&](uint32_t a, uint32_t b) {
            if ((a == head) != (b == head)) return a == head;
            const bool an = base.ranks[a].node == base.ranks[head].node;
            const bool bn = base.ranks[b].node == base.ranks[head].node;
            if (an != bn) return an;
            return sent[a] < sent[b];
          };
          for (uint32_t r : ranks) {
            if (better(r, src)) src = r;
          }
          Move m;
          m.src = src;
          m.dst = head;
          m.tensor = t;
          m.box = cut;
          m.srcSpace = Space::kTrain;
          m.dstSpace = Space::kBucket;
          m.srcDtype = m.dstDtype = ti.trainDtype;
          m.kind = src == head ? MoveKind::kConvert : MoveKind::kGather;
          m.stage = gather;
          m.bucket = e.bucket;
          sent[src] += p.addMove(m).bytes;
        }
      }
    }
    // Broadcast: one chain per bucket, rotated per channel.
    for (size_t b = firstBucket; b < p.buckets.size(); ++b) {
      const size_t c = (b - firstBucket) % static_cast<size_t>(channels);
      uint32_t prev = head;
      for (const auto& [node, ranks] : inferByNode) {
        const size_t g = ranks.size();
        const size_t start = (c * g / static_cast<size_t>(channels)) % g;
        for (size_t k = 0; k < g; ++k) {
          const uint32_t next = ranks[(start + k) % g];
          Move m;
          m.src = prev;
          m.dst = next;
          m.tensor = plan::kWholeBucket;
          m.srcSpace = m.dstSpace = Space::kBucket;
          m.kind = MoveKind::kBroadcastHop;
          m.stage = bcast;
          m.bucket = static_cast<uint32_t>(b);
          p.addMove(m);
          prev = next;
        }
      }
    }
    // Keep: each inference rank takes its slice out of the buckets.
    for (uint32_t t : stageTensors) {
      const auto& ti = p.tensors[t];
      for (const plan::Holding* h : inferHold[t]) {
        for (const auto& e : entries[t]) {
          RegionBox cut;
          if (!plan::intersect(h->box, e.box, &cut)) continue;
          Move m;
          m.src = m.dst = h->rank;
          m.tensor = t;
          m.box = cut;
          m.srcSpace = Space::kBucket;
          m.dstSpace = Space::kInfer;
          m.srcDtype = ti.trainDtype;
          m.dstDtype = ti.inferDtype;
          m.kind = MoveKind::kConvert;
          m.stage = keep;
          m.bucket = e.bucket;
          p.addMove(m);
        }
      }
    }
  }
  if (pr.options.firstUpdate) TIDE_RETURN_IF_ERROR(addRegisterSteps(p, pr.options.pageBytes));
  TIDE_RETURN_IF_ERROR(p.validate());
  return p;
}

}  // namespace tide::sync
