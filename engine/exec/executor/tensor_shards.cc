#include "engine/exec/executor/tensor_shards.h"

#include <cstdio>
#include <cstring>
#include <map>
#include <string>

#include "engine/exec/executor/hash_state.h"

namespace tide::exec {

using plan::Space;

namespace {

std::string digestKey(int version, int rank) {
  return "tensor-digests/" + std::to_string(version) + "/" + std::to_string(rank);
}

// 16 hex digits per block: the store carries text.
std::string encode(const std::vector<uint64_t>& digests) {
  std::string s(digests.size() * 16, '0');
  for (size_t i = 0; i < digests.size(); ++i) {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(digests[i]));
    std::memcpy(s.data() + i * 16, buf, 16);
  }
  return s;
}

// Peer data: checked, never trusted.
Result<std::vector<uint64_t>> decode(const std::string& s, size_t blocks, int rank) {
  if (s.size() != blocks * 16) {
    return TIDE_ERROR(Code::kDataLoss, "verify: rank " + std::to_string(rank) + " was sent " +
                                           std::to_string(s.size() / 16) + " digests for " +
                                           std::to_string(blocks) + " blocks");
  }
  std::vector<uint64_t> out(blocks);
  for (size_t i = 0; i < blocks; ++i) {
    uint64_t v = 0;
    for (size_t k = 0; k < 16; ++k) {
      const char c = s[i * 16 + k];
      const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (d < 0) return TIDE_ERROR(Code::kDataLoss, "verify: a digest that is not hex");
      v = v << 4 | static_cast<uint64_t>(d);
    }
    out[i] = v;
  }
  return out;
}

// The box of a whole tensor.
plan::RegionBox wholeBox(const plan::TensorInfo& ti) {
  plan::RegionBox b;
  b.ndim = static_cast<uint8_t>(ti.shape.size());
  for (size_t d = 0; d < ti.shape.size(); ++d) b.hi[d] = static_cast<plan::Coord>(ti.shape[d]);
  return b;
}

}  // namespace

TensorShards::TensorShards(const plan::TransferPlan& plan, const std::vector<RankLayout>& layouts,
                           int rank, std::vector<std::span<uint8_t>> tensors, Store& store,
                           double timeoutSeconds)
    : plan_(plan),
      layouts_(layouts),
      rank_(rank),
      tensors_(std::move(tensors)),
      store_(store),
      timeoutSeconds_(timeoutSeconds) {
  for (const auto& r : plan_.ranks) {
    if (r.role != plan::Role::kTrainer) continue;
    publishes_ = static_cast<int>(r.id) == rank_;
    break;
  }
}

Result<std::unique_ptr<TensorShards>> TensorShards::create(const plan::TransferPlan& plan,
                                                           const std::vector<RankLayout>& layouts,
                                                           int rank,
                                                           std::vector<std::span<uint8_t>> tensors,
                                                           Store& store, double timeoutSeconds) {
  if (rank < 0 || static_cast<size_t>(rank) >= plan.ranks.size() ||
      layouts.size() != plan.ranks.size()) {
    return TIDE_ERROR(Code::kInvalidArgument,
                      "tensor shards: rank " + std::to_string(rank) + " is not in the plan");
  }
  if (tensors.size() != plan.tensors.size()) {
    return TIDE_ERROR(Code::kInvalidArgument, "tensor shards: " + std::to_string(tensors.size()) +
                                                  " tensors for a plan of " +
                                                  std::to_string(plan.tensors.size()));
  }
  for (size_t t = 0; t < plan.tensors.size(); ++t) {
    const plan::TensorInfo& ti = plan.tensors[t];
    if (ti.trainDtype != ti.inferDtype) {
      return TIDE_ERROR(Code::kInvalidArgument,
                        "tensor shards: " + ti.name + " is " + workloads::dtypeName(ti.trainDtype) +
                            " in training and " + workloads::dtypeName(ti.inferDtype) +
                            " in inference; tensors are moved as they are");
    }
    const uint64_t want = plan.regionBytes(static_cast<uint32_t>(t), wholeBox(ti), ti.trainDtype);
    if (tensors[t].size() != want) {
      return TIDE_ERROR(Code::kInvalidArgument,
                        "tensor shards: " + ti.name + " has " + std::to_string(tensors[t].size()) +
                            " bytes; the plan's tensor has " + std::to_string(want));
    }
  }
  return std::unique_ptr<TensorShards>(
      new TensorShards(plan, layouts, rank, std::move(tensors), store, timeoutSeconds));
}

std::vector<Run> TensorShards::runsOf(const Placed& p) const {
  Placed whole;
  whole.tensor = p.tensor;
  whole.dtype = p.dtype;
  whole.box = wholeBox(plan_.tensors[p.tensor]);
  std::vector<Run> runs;
  boxRuns(p.box, whole, p, workloads::bytesOf(p.dtype), runs);
  return runs;
}

uint64_t TensorShards::digestOf(const Placed& p) const {
  HashState h;
  const uint8_t* src = tensors_[p.tensor].data();
  for (const Run& r : runsOf(p)) XXH3_64bits_update(h.s, src + r.srcOffset, r.bytes);
  return XXH3_64bits_digest(h.s);
}

Status TensorShards::publishDigests(int version) const {
  // Engines that hold the same box of a tensor (replicas) share its digest.
  std::map<std::pair<uint32_t, std::string>, uint64_t> seen;
  for (size_t r = 0; r < plan_.ranks.size(); ++r) {
    const auto& blocks = layouts_[r].placed(Space::kInfer);
    if (blocks.empty()) continue;
    std::vector<uint64_t> d;
    d.reserve(blocks.size());
    for (const auto& p : blocks) {
      auto [it, fresh] = seen.try_emplace({p.tensor, p.box.toString()}, 0);
      if (fresh) it->second = digestOf(p);
      d.push_back(it->second);
    }
    TIDE_RETURN_IF_ERROR(store_.set(digestKey(version, static_cast<int>(r)), encode(d)));
  }
  return Status::ok();
}

void TensorShards::copyIn(const RankLayout& layout, Space s, uint8_t* base) const {
  for (const auto& p : layout.placed(s)) {
    const uint8_t* src = tensors_[p.tensor].data();
    for (const Run& r : runsOf(p)) std::memcpy(base + r.dstOffset, src + r.srcOffset, r.bytes);
  }
}

Status TensorShards::fillTrain(const RankLayout& layout, int version, uint8_t* base) {
  copyIn(layout, Space::kTrain, base);
  // Hashed from the tensors themselves, after the shard was taken from them.
  return publishes_ ? publishDigests(version) : Status::ok();
}

Status TensorShards::loadInfer(const RankLayout& layout, uint8_t* base) {
  copyIn(layout, Space::kInfer, base);
  return Status::ok();
}

Status TensorShards::unload(const RankLayout& layout, const uint8_t* base) {
  for (const auto& p : layout.placed(Space::kInfer)) {
    uint8_t* dst = tensors_[p.tensor].data();
    for (const Run& r : runsOf(p)) std::memcpy(dst + r.srcOffset, base + r.dstOffset, r.bytes);
  }
  return Status::ok();
}

Result<uint64_t> TensorShards::verifyInfer(const RankLayout& layout, int rank, int version,
                                           const uint8_t* base) const {
  const auto& blocks = layout.placed(Space::kInfer);
  if (blocks.empty()) return uint64_t{0};
  TIDE_ASSIGN_OR_RETURN(std::string text, store_.get(digestKey(version, rank), timeoutSeconds_));
  TIDE_ASSIGN_OR_RETURN(auto want, decode(text, blocks.size(), rank));
  uint64_t checked = 0;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const Placed& p = blocks[i];
    const uint64_t got = XXH3_64bits(base + p.offset, p.bytes);
    if (got != want[i]) {
      return TIDE_ERROR(Code::kDataLoss,
                        "verify: rank " + std::to_string(rank) + " " +
                            plan_.tensors[p.tensor].name + " " + p.box.toString() +
                            " is not the trainer's version " + std::to_string(version) + " (xxh3 " +
                            std::to_string(got) + ", expected " + std::to_string(want[i]) + ")");
    }
    checked += p.bytes;
  }
  // The version before is done with: one digest key per engine, not one per
  // step for the rest of a long run.
  if (version > 0) TIDE_RETURN_IF_ERROR(store_.erase(digestKey(version - 1, rank)));
  return checked;
}

}  // namespace tide::exec
