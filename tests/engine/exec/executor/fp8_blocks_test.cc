// FP8 holdings in executor buffers, checked against the reference quantizer
// run once over the whole tensor: quantizing a block-aligned staging box,
// copying a box that cuts blocks (data and scales), 1-D, 2-D and 3-D tensors,
// and the generator's expectation used by verification.

#include "engine/exec/executor/fp8_blocks.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <cstring>
#include <random>

#include "engine/sync/fp8_quantizer.h"
#include "workloads/model.h"

namespace tide::exec {
namespace {

using plan::RegionBox;

RegionBox boxOf(std::vector<uint64_t> lo, std::vector<uint64_t> hi) {
  RegionBox b;
  b.ndim = static_cast<uint8_t>(lo.size());
  for (size_t d = 0; d < lo.size(); ++d) {
    b.lo[d] = lo[d];
    b.hi[d] = hi[d];
  }
  return b;
}

uint64_t flatIndex(const std::vector<uint64_t>& shape, const std::vector<uint64_t>& idx) {
  uint64_t f = 0;
  for (size_t d = 0; d < shape.size(); ++d) f = f * shape[d] + idx[d];
  return f;
}

// A random bf16 tensor and its reference quantization, whole: data per
// element, scales per (leading index, block row, block col).
struct Reference {
  std::vector<uint64_t> shape;
  uint32_t block;
  std::vector<uint16_t> values;
  std::vector<uint8_t> q;
  std::vector<float> scales;  // [lead][blockRows][blockCols]
  uint64_t rows = 1, cols = 1, lead = 1;

  Reference(std::vector<uint64_t> s, uint32_t b) : shape(std::move(s)), block(b) {
    const size_t nd = shape.size();
    cols = shape[nd - 1];
    if (nd >= 2) rows = shape[nd - 2];
    for (size_t d = 0; d + 2 < nd; ++d) lead *= shape[d];
    std::mt19937 gen(7);
    std::normal_distribution<float> n(0.0f, 0.05f);
    values.resize(lead * rows * cols);
    for (auto& v : values) v = sync::floatToBf16(n(gen));
    values[3] = sync::floatToBf16(3.5f);  // one block with a large amax
    q.resize(values.size());
    sync::Fp8BlockShape bs{static_cast<int64_t>(rows), static_cast<int64_t>(cols), block};
    scales.resize(lead * bs.numScales());
    for (uint64_t l = 0; l < lead; ++l) {
      const uint64_t n2 = rows * cols;
      EXPECT_TRUE(sync::quantizeBf16ToE4m3(
                      std::span(values).subspan(l * n2, n2), bs, std::span(q).subspan(l * n2, n2),
                      std::span(scales).subspan(l * bs.numScales(), bs.numScales()))
                      .isOk());
    }
  }
  float scaleAt(const std::vector<uint64_t>& idx) const {
    const size_t nd = shape.size();
    uint64_t l = 0;
    for (size_t d = 0; d + 2 < nd; ++d) l = l * shape[d] + idx[d];
    const uint64_t br = nd >= 2 ? idx[nd - 2] / block : 0;
    const uint64_t bcs = (cols + block - 1) / block, brs = (rows + block - 1) / block;
    return scales[(l * brs + br) * bcs + idx[nd - 1] / block];
  }
};

// Every element of `box` in the FP8 block `p` (buffer `base`) equals the
// reference, and so does the scale of every block it touches.
void expectMatches(const Reference& ref, const Placed& p, const uint8_t* base,
                   const RegionBox& box) {
  const size_t nd = ref.shape.size();
  // The scale grid of p, in the order fp8_blocks.h defines.
  std::vector<uint64_t> glo(nd), gn(nd);
  for (size_t d = 0; d < nd; ++d) {
    const bool blocked = d + 2 >= nd;
    glo[d] = blocked ? p.box.lo[d] / ref.block : p.box.lo[d];
    const uint64_t ghi = blocked ? (p.box.hi[d] + ref.block - 1) / ref.block : p.box.hi[d];
    gn[d] = ghi - glo[d];
  }
  std::vector<uint64_t> idx(box.lo.begin(), box.lo.begin() + nd);
  size_t checked = 0;
  while (true) {
    uint64_t off = 0, g = 0;
    for (size_t d = 0; d < nd; ++d) {
      off = off * (p.box.hi[d] - p.box.lo[d]) + (idx[d] - p.box.lo[d]);
      const uint64_t gi = d + 2 >= nd ? idx[d] / ref.block : idx[d];
      g = g * gn[d] + (gi - glo[d]);
    }
    ASSERT_EQ(base[p.offset + off], ref.q[flatIndex(ref.shape, idx)]) << "element " << off;
    float s;
    std::memcpy(&s, base + p.offset + p.box.volume() + 4 * g, 4);
    ASSERT_EQ(s, ref.scaleAt(idx)) << "scale " << g;
    ++checked;
    size_t d = nd;
    while (d-- > 0) {
      if (++idx[d] < box.hi[d]) break;
      idx[d] = box.lo[d];
    }
    if (d == static_cast<size_t>(-1)) break;
  }
  EXPECT_EQ(checked, box.volume());
}

Placed fp8Placed(const RegionBox& box, uint32_t block, uint64_t offset) {
  Placed p;
  p.box = box;
  p.dtype = workloads::DType::kFP8E4M3;
  p.fp8Block = block;
  p.offset = offset;
  plan::TransferPlan t;
  plan::TensorInfo ti;
  ti.shape.assign(box.hi.begin(), box.hi.begin() + box.ndim);
  ti.fp8Block = block;
  t.tensors.push_back(ti);
  p.bytes = t.regionBytes(0, box, p.dtype);
  return p;
}

// Quantizes a block-aligned staging box from the whole bf16 tensor, then
// copies a box that cuts blocks into a third buffer; both match the reference.
void roundTrip(const Reference& ref, const RegionBox& staging, const RegionBox& target,
               const RegionBox& dstBox) {
  Placed whole;
  std::vector<uint64_t> zero(ref.shape.size(), 0);
  whole.box = boxOf(zero, ref.shape);
  whole.offset = 4;
  std::vector<uint8_t> src(4 + 2 * ref.values.size());
  std::memcpy(src.data() + 4, ref.values.data(), 2 * ref.values.size());

  const Placed st = fp8Placed(staging, ref.block, 8);
  std::vector<uint8_t> stBuf(8 + st.bytes, 0xEE);
  ASSERT_TRUE(
      quantizeBlocks(staging, ref.shape, st, stBuf.data(), bf16Blocks(whole, src.data())).isOk());
  expectMatches(ref, st, stBuf.data(), staging);

  const Placed dst = fp8Placed(dstBox, ref.block, 3);
  std::vector<uint8_t> dstBuf(3 + dst.bytes, 0xEE);
  std::vector<Run> runs;
  fp8Runs(target, st, dst, runs);
  for (const Run& r : runs) {
    ASSERT_LE(r.srcOffset + r.bytes, stBuf.size());
    ASSERT_LE(r.dstOffset + r.bytes, dstBuf.size());
    std::memcpy(dstBuf.data() + r.dstOffset, stBuf.data() + r.srcOffset, r.bytes);
  }
  expectMatches(ref, dst, dstBuf.data(), target);
}

TEST(Fp8Blocks, TwoDimsWithPartialEdgeBlocks) {
  Reference ref({37, 45}, 16);
  roundTrip(ref, boxOf({16, 16}, {37, 45}), boxOf({20, 19}, {33, 40}), boxOf({18, 17}, {35, 44}));
}

TEST(Fp8Blocks, ExpertsBlockTheLastTwoDims) {
  Reference ref({3, 20, 18}, 8);
  roundTrip(ref, boxOf({1, 8, 0}, {3, 20, 18}), boxOf({1, 9, 3}, {3, 17, 13}),
            boxOf({1, 9, 3}, {3, 17, 13}));
}

TEST(Fp8Blocks, OneDimBlocksAlongTheOnlyDim) {
  Reference ref({50}, 16);
  roundTrip(ref, boxOf({16}, {50}), boxOf({17}, {49}), boxOf({10}, {50}));
}

TEST(Fp8Blocks, ASourceWithoutTheWholeBlockIsRefused) {
  Reference ref({32, 32}, 16);
  Placed part;
  part.box = boxOf({0, 0}, {32, 20});  // cuts the second block column
  std::vector<uint8_t> src(2 * 32 * 20);
  const RegionBox box = boxOf({0, 0}, {16, 32});
  const Placed dst = fp8Placed(box, 16, 0);
  std::vector<uint8_t> out(dst.bytes);
  Status s = quantizeBlocks(box, ref.shape, dst, out.data(), bf16Blocks(part, src.data()));
  EXPECT_EQ(s.code(), Code::kFailedPrecondition) << s.toString();
  EXPECT_NE(s.message().find("not whole"), std::string::npos) << s.toString();
}

TEST(Fp8Blocks, GeneratorExpectationMatchesTheWholeTensorReference) {
  auto spec = orThrow(workloads::loadModel("tiny-moe"));
  auto inv = workloads::buildInventory(spec);
  workloads::SyntheticWeights w(inv, {}, workloads::RlConfig{}, 1);
  for (uint32_t t = 0; t < inv.tensors.size(); ++t) {
    const auto& ts = inv.tensors[t];
    if (ts.inferDtype != workloads::DType::kFP8E4M3 || ts.shape.size() != 2 || ts.shape[0] < 3 ||
        ts.shape[1] < ts.fp8Block) {
      continue;
    }
    for (int version : {0, 1}) {
      // The whole tensor, quantized once by the reference.
      Reference ref(ts.shape, ts.fp8Block);
      std::vector<uint64_t> zero(2, 0);
      ASSERT_TRUE(w.fillBox(t, workloads::Box{zero, ts.shape}, version, ref.values).isOk());
      sync::Fp8BlockShape bs{static_cast<int64_t>(ts.shape[0]), static_cast<int64_t>(ts.shape[1]),
                             ts.fp8Block};
      ASSERT_TRUE(sync::quantizeBf16ToE4m3(ref.values, bs, ref.q, ref.scales).isOk());
      // A box that cuts blocks on both dims.
      const RegionBox cut = boxOf({1, ts.fp8Block / 2}, {ts.shape[0] - 1, ts.shape[1] - 3});
      Placed p = fp8Placed(cut, ts.fp8Block, 0);
      p.tensor = t;
      std::vector<uint8_t> got(p.bytes);
      ASSERT_TRUE(fillExpected(w, p, version, got.data()).isOk());
      expectMatches(ref, p, got.data(), cut);
      auto sum = expectedChecksum(w, p, version);
      ASSERT_TRUE(sum.isOk());
      EXPECT_EQ(*sum, XXH3_64bits(got.data(), got.size()));
    }
    return;  // one tensor is enough; the loop only finds it
  }
  FAIL() << "tiny-moe has no 2-D FP8 tensor";
}

}  // namespace
}  // namespace tide::exec
