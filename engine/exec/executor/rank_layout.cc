#include "engine/exec/executor/rank_layout.h"

#include <string>

#include "engine/plan/rank_buffers.h"

namespace tide::exec {

using plan::Space;

namespace {

uint64_t keyOf(Space s, uint32_t tensor, uint32_t bucket) {
  return s == Space::kBucket ? (static_cast<uint64_t>(bucket) << 32) | tensor : tensor;
}

// A holding or bucket entry before placement: its size in the buffer.
Result<Placed> placedOf(const plan::TransferPlan& p, uint32_t tensor, const plan::RegionBox& box,
                        workloads::DType dtype) {
  if (tensor >= p.tensors.size()) {
    return TIDE_ERROR(Code::kInvalidArgument,
                      "exec: unknown tensor " + std::to_string(tensor) + " in the plan");
  }
  Placed pl;
  pl.tensor = tensor;
  pl.box = box;
  pl.dtype = dtype;
  if (dtype == workloads::DType::kFP8E4M3) {
    pl.fp8Block = p.tensors[tensor].fp8Block;
    if (pl.fp8Block == 0) {
      return TIDE_ERROR(Code::kUnimplemented, "exec: FP8 " + p.tensors[tensor].name +
                                                  " has no block scales (fp8 block 0)");
    }
  }
  pl.bytes = p.regionBytes(tensor, box, dtype);
  return pl;
}

}  // namespace

void RankLayout::place(Space s, Placed p) {
  const int i = static_cast<int>(s);
  p.offset = bytes_[i];
  bytes_[i] += p.bytes;
  index_[i][keyOf(s, p.tensor, p.bucket)].push_back(static_cast<uint32_t>(placed_[i].size()));
  placed_[i].push_back(p);
}

Result<std::vector<RankLayout>> RankLayout::buildAll(const plan::TransferPlan& p) {
  std::vector<RankLayout> out(p.ranks.size());
  for (const auto& h : p.holdings) {
    if (h.rank >= out.size() || h.tensor >= p.tensors.size()) {
      return TIDE_ERROR(Code::kInvalidArgument, "exec: holding references an unknown rank/tensor");
    }
    TIDE_ASSIGN_OR_RETURN(Placed pl, placedOf(p, h.tensor, h.box, h.dtype));
    if (h.space == Space::kBucket) continue;  // buckets are placed below
    out[h.rank].place(h.space, pl);
  }
  // A rank holds a bucket when it packs it or sends/receives it.
  const auto bucketsOf = plan::bucketsHeldBy(p);
  for (size_t r = 0; r < out.size(); ++r) {
    for (uint32_t b : bucketsOf[r]) {
      if (b >= p.buckets.size()) {
        return TIDE_ERROR(Code::kInvalidArgument,
                          "exec: move references unknown bucket " + std::to_string(b));
      }
      const uint64_t begin = out[r].bytes_[static_cast<int>(Space::kBucket)];
      for (const auto& e : p.buckets[b].entries) {
        TIDE_ASSIGN_OR_RETURN(Placed pl, placedOf(p, e.tensor, e.box, e.dtype));
        pl.bucket = b;
        out[r].place(Space::kBucket, pl);
      }
      out[r].buckets_[b] = {begin, out[r].bytes_[static_cast<int>(Space::kBucket)] - begin};
    }
  }
  return out;
}

Result<const Placed*> RankLayout::find(Space s, uint32_t tensor, const plan::RegionBox& box,
                                       uint32_t bucket) const {
  const int i = static_cast<int>(s);
  auto it = index_[i].find(keyOf(s, tensor, bucket));
  if (it != index_[i].end()) {
    for (uint32_t k : it->second) {
      if (placed_[i][k].box.contains(box)) return &placed_[i][k];
    }
  }
  return TIDE_ERROR(Code::kNotFound, std::string("exec: no ") + plan::spaceName(s) +
                                         " block holds tensor " + std::to_string(tensor) + " " +
                                         box.toString());
}

Result<std::pair<uint64_t, uint64_t>> RankLayout::bucketExtent(uint32_t bucket) const {
  auto it = buckets_.find(bucket);
  if (it == buckets_.end()) {
    return TIDE_ERROR(Code::kNotFound, "exec: bucket " + std::to_string(bucket) + " not held");
  }
  return it->second;
}

void boxRuns(const plan::RegionBox& box, const Placed& src, const Placed& dst, uint64_t elemBytes,
             std::vector<Run>& out) {
  const int nd = box.ndim;
  if (box.volume() == 0) return;
  // Row-major strides (in elements) of both blocks.
  std::array<uint64_t, plan::kMaxDims> ss{}, ds{};
  uint64_t sAcc = 1, dAcc = 1;
  for (int d = nd - 1; d >= 0; --d) {
    ss[d] = sAcc;
    ds[d] = dAcc;
    sAcc *= src.box.hi[d] - src.box.lo[d];
    dAcc *= dst.box.hi[d] - dst.box.lo[d];
  }
  // Dims k..nd-1 form one contiguous run when every dim after k spans both blocks.
  int k = nd - 1;
  while (k > 0) {
    const uint64_t ext = box.hi[k] - box.lo[k];
    if (ext != src.box.hi[k] - src.box.lo[k] || ext != dst.box.hi[k] - dst.box.lo[k]) break;
    --k;
  }
  uint64_t runElems = 1;
  for (int d = std::max(k, 0); d < nd; ++d) runElems *= box.hi[d] - box.lo[d];
  const uint64_t runBytes = runElems * elemBytes;
  std::array<uint64_t, plan::kMaxDims> idx{};
  for (int d = 0; d < nd; ++d) idx[d] = box.lo[d];
  while (true) {
    uint64_t so = 0, doff = 0;
    for (int d = 0; d < nd; ++d) {
      so += (idx[d] - src.box.lo[d]) * ss[d];
      doff += (idx[d] - dst.box.lo[d]) * ds[d];
    }
    Run r{src.offset + so * elemBytes, dst.offset + doff * elemBytes, runBytes};
    if (!out.empty() && out.back().srcOffset + out.back().bytes == r.srcOffset &&
        out.back().dstOffset + out.back().bytes == r.dstOffset) {
      out.back().bytes += r.bytes;
    } else {
      out.push_back(r);
    }
    // Advance the outer index (dims 0..k-1).
    int d = k - 1;
    while (d >= 0) {
      if (++idx[d] < box.hi[d]) break;
      idx[d] = box.lo[d];
      --d;
    }
    if (d < 0) break;
  }
}

}  // namespace tide::exec
