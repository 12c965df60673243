#include "engine/exec/executor/fp8_blocks.h"

#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "engine/sync/fp8_quantizer.h"

namespace tide::exec {

using plan::kMaxDims;
using plan::RegionBox;
using Index = std::array<uint64_t, kMaxDims>;

namespace {

// First dim tiled in blocks: the last two, or the only one.
int firstBlocked(int nd) {
  return std::max(0, nd - 2);
}

uint64_t ceilDiv(uint64_t a, uint64_t b) {
  return (a + b - 1) / b;
}

// The block grid `box` touches, in grid coordinates of the whole tensor.
RegionBox gridOf(const RegionBox& box, uint32_t block) {
  RegionBox g = box;
  for (int d = firstBlocked(box.ndim); d < box.ndim; ++d) {
    g.lo[d] = box.lo[d] / block;
    g.hi[d] = ceilDiv(box.hi[d], block);
  }
  return g;
}

// Calls fn(index) for every index of the first `dims` dims of `box` (the
// others at lo), row-major, while fn returns true.
template <typename Fn>
void forEachIndex(const RegionBox& box, int dims, Fn&& fn) {
  if (box.volume() == 0) return;
  Index idx{};
  for (int d = 0; d < box.ndim; ++d) idx[d] = box.lo[d];
  while (fn(idx)) {
    int d = dims - 1;
    while (d >= 0) {
      if (++idx[d] < box.hi[d]) break;
      idx[d] = box.lo[d];
      --d;
    }
    if (d < 0) return;
  }
}

// Calls fn(index) for the first element of every row (last dim) of `box`.
template <typename Fn>
void forEachRow(const RegionBox& box, Fn&& fn) {
  forEachIndex(box, box.ndim - 1, [&](const Index& idx) {
    fn(idx);
    return true;
  });
}

// Row-major offset of `idx` in `box` (elements).
uint64_t offsetIn(const RegionBox& box, const Index& idx) {
  uint64_t off = 0;
  for (int d = 0; d < box.ndim; ++d) off = off * (box.hi[d] - box.lo[d]) + (idx[d] - box.lo[d]);
  return off;
}

// Byte offset of the scale of grid cell `g` in a placed FP8 block.
uint64_t scaleOffset(const Placed& p, const Index& g) {
  return p.offset + p.box.volume() + 4 * offsetIn(gridOf(p.box, p.fp8Block), g);
}

void appendRun(std::vector<Run>& out, Run r) {
  if (!out.empty() && out.back().srcOffset + out.back().bytes == r.srcOffset &&
      out.back().dstOffset + out.back().bytes == r.dstOffset) {
    out.back().bytes += r.bytes;
  } else {
    out.push_back(r);
  }
}

}  // namespace

void fp8Runs(const RegionBox& box, const Placed& src, const Placed& dst, std::vector<Run>& out) {
  boxRuns(box, src, dst, 1, out);
  const RegionBox g = gridOf(box, dst.fp8Block);
  const uint64_t rowBlocks = g.hi[g.ndim - 1] - g.lo[g.ndim - 1];
  forEachRow(g, [&](const Index& cell) {
    appendRun(out, Run{scaleOffset(src, cell), scaleOffset(dst, cell), 4 * rowBlocks});
  });
}

Status quantizeBlocks(const RegionBox& box, const std::vector<uint64_t>& shape, const Placed& dst,
                      uint8_t* dstBase, const BlockSource& source) {
  const int nd = box.ndim;
  const uint32_t b = dst.fp8Block;
  if (b == 0 || !dst.box.contains(box) || shape.size() != static_cast<size_t>(nd)) {
    return TIDE_ERROR(Code::kInvalidArgument,
                      "fp8: " + box.toString() + " is not inside FP8 block " + dst.box.toString());
  }
  const int fb = firstBlocked(nd);
  const RegionBox grid = gridOf(box, b);
  std::vector<uint16_t> values;
  std::vector<uint8_t> q;
  Status status;
  // Every cell of the grid: one whole block, quantized alone.
  forEachIndex(grid, nd, [&](const Index& cell) {
    RegionBox blk;
    blk.ndim = box.ndim;
    for (int d = 0; d < nd; ++d) {
      blk.lo[d] = d < fb ? cell[d] : cell[d] * b;
      blk.hi[d] = d < fb ? cell[d] + 1 : std::min<uint64_t>(shape[d], (cell[d] + 1) * b);
    }
    values.resize(blk.volume());
    q.resize(blk.volume());
    status = source(blk, values);
    if (!status.isOk()) return false;
    sync::Fp8BlockShape bs;
    bs.cols = static_cast<int64_t>(blk.hi[nd - 1] - blk.lo[nd - 1]);
    bs.rows = static_cast<int64_t>(blk.volume()) / bs.cols;
    bs.block = b;
    float scale = 0;
    status = sync::quantizeBf16ToE4m3(values, bs, q, std::span(&scale, 1));
    if (!status.isOk()) return false;
    std::memcpy(dstBase + scaleOffset(dst, cell), &scale, sizeof scale);
    // The part of the block inside `box`, row by row.
    RegionBox cut;
    plan::intersect(blk, box, &cut);
    const uint64_t len = cut.hi[nd - 1] - cut.lo[nd - 1];
    forEachRow(cut, [&](const Index& at) {
      std::memcpy(dstBase + dst.offset + offsetIn(dst.box, at), q.data() + offsetIn(blk, at), len);
    });
    return true;
  });
  return status.withContext("fp8: quantizing " + box.toString());
}

BlockSource bf16Blocks(const Placed& src, const uint8_t* srcBase) {
  return [&src, srcBase](const RegionBox& blk, std::span<uint16_t> out) -> Status {
    if (!src.box.contains(blk)) {
      return TIDE_ERROR(Code::kFailedPrecondition,
                        "fp8: block " + blk.toString() + " is not whole in the bf16 source " +
                            src.box.toString() + " (a block's scale needs all of it)");
    }
    const uint64_t len = blk.hi[blk.ndim - 1] - blk.lo[blk.ndim - 1];
    uint16_t* o = out.data();
    forEachRow(blk, [&](const Index& at) {
      std::memcpy(o, srcBase + src.offset + 2 * offsetIn(src.box, at), 2 * len);
      o += len;
    });
    return Status::ok();
  };
}

Status fillExpected(const workloads::SyntheticWeights& w, const Placed& p, int version,
                    uint8_t* at) {
  if (p.dtype != workloads::DType::kFP8E4M3) {
    return w.fillBox(p.tensor, p.box.toBox(), version,
                     std::span(reinterpret_cast<uint16_t*>(at), p.box.volume()));
  }
  Placed here = p;
  here.offset = 0;
  return quantizeBlocks(p.box, w.inventory().tensors[p.tensor].shape, here, at,
                        [&](const RegionBox& blk, std::span<uint16_t> out) {
                          return w.fillBox(p.tensor, blk.toBox(), version, out);
                        });
}

Result<uint64_t> expectedChecksum(const workloads::SyntheticWeights& w, const Placed& p,
                                  int version) {
  if (p.dtype != workloads::DType::kFP8E4M3) return w.boxChecksum(p.tensor, p.box.toBox(), version);
  std::vector<uint8_t> want(p.bytes);
  TIDE_RETURN_IF_ERROR(fillExpected(w, p, version, want.data()));
  return XXH3_64bits(want.data(), want.size());
}

}  // namespace tide::exec
