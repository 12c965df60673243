// The GPU kernels' element math (engine/gpu/*_math.h), run on the host
// against tide's CPU references: the generator (SyntheticWeights), the FP8
// quantizer (sync::quantizeBf16ToE4m3) and XXH3_64bits. These are the very
// functions the kernels call, so this runs for real on machines without a
// GPU; gpu_device_test checks the kernels themselves where one exists.

#include <gtest/gtest.h>
#include <xxhash.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "engine/gpu/fill_math.h"
#include "engine/gpu/fill_params.h"
#include "engine/gpu/fp8_math.h"
#include "engine/gpu/xxh3_math.h"
#include "engine/gpu/xxh3_secret.h"
#include "engine/sync/fp8_quantizer.h"
#include "workloads/model.h"
#include "workloads/rng.h"
#include "workloads/routing.h"
#include "workloads/weights.h"

namespace tide::gpu {
namespace {

using workloads::Box;

TEST(GpuFillMath, BoxIndexMatchesTheHostOrder) {
  const std::vector<std::vector<uint64_t>> shapes = {{1000}, {37, 53}, {5, 7, 11}, {3, 4, 5, 6}};
  for (const auto& shape : shapes) {
    Box box = Box::full(shape);
    for (size_t d = 0; d < shape.size(); ++d) {
      box.lo[d] = shape[d] / 3;
      box.hi[d] = shape[d] - shape[d] / 4;
    }
    const BoxGeom g = orThrow(boxGeom(shape, box));
    const std::vector<uint64_t> want = workloads::boxFlatIndices(shape, box);
    ASSERT_EQ(want.size(), box.volume());
    for (uint64_t j = 0; j < want.size(); ++j) ASSERT_EQ(boxElementFlat(g, j), want[j]) << j;
  }
}

TEST(GpuFillMath, BadBoxIsRefused) {
  EXPECT_FALSE(boxGeom({4, 4}, Box{{0, 0}, {5, 4}}).isOk());
  EXPECT_FALSE(boxGeom({4, 4}, Box{{0}, {4}}).isOk());
  EXPECT_FALSE(boxGeom(std::vector<uint64_t>(9, 2), Box::full(std::vector<uint64_t>(9, 2))).isOk());
}

// Every element of the box, computed as the kernel does, equals fillBox's.
TEST(GpuFillMath, ElementsMatchTheHostGeneratorAtEveryVersion) {
  const workloads::ModelSpec spec = orThrow(workloads::loadModel("tiny-moe"));
  const workloads::ModelInventory inv = workloads::buildInventory(spec);
  const int steps = 5;
  workloads::RoutingConfig rc;
  const workloads::SyntheticWeights w(inv, workloads::generateRouting(spec, rc, steps),
                                      workloads::RlConfig{}, steps);
  int checked = 0;
  for (uint32_t t = 0; t < inv.tensors.size(); t += 7) {
    const auto& shape = inv.tensors[t].shape;
    Box box = Box::full(shape);
    box.lo.back() = shape.back() / 5;  // a box that starts mid-row, off the 4-element hash groups
    box.hi.back() = shape.back() - shape.back() / 7;
    if (box.volume() > 200000) box.hi[0] = box.lo[0] + 1;
    for (int v : {0, 1, steps}) {
      std::vector<uint16_t> want(box.volume());
      ASSERT_TRUE(w.fillBox(t, box, v, want).isOk());
      std::vector<FillStep> st;
      FillParams p = orThrow(fillParams(w, t, v, &st));
      p.table = workloads::normalTable();
      p.steps = st.data();
      const BoxGeom g = orThrow(boxGeom(shape, box));
      for (uint64_t j = 0; j < want.size(); ++j) {
        ASSERT_EQ(fillElement(p, boxElementFlat(g, j)), want[j])
            << inv.tensors[t].name << " v" << v << " element " << j;
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 10);
}

TEST(GpuFillMath, ParamsRefuseBadTensorOrVersion) {
  const workloads::ModelSpec spec = orThrow(workloads::loadModel("tiny-moe"));
  const workloads::ModelInventory inv = workloads::buildInventory(spec);
  const workloads::SyntheticWeights w(inv, workloads::RoutingTrace{}, workloads::RlConfig{}, 2);
  std::vector<FillStep> st;
  EXPECT_FALSE(fillParams(w, static_cast<uint32_t>(inv.tensors.size()), 0, &st).isOk());
  EXPECT_FALSE(fillParams(w, 0, 3, &st).isOk());
  EXPECT_FALSE(fillParams(w, 0, -1, &st).isOk());
}

TEST(GpuFp8Math, RoundingMatchesTheReferenceOverFloats) {
  // Every 4099th float bit pattern (~1M values: normals, subnormals, inf, NaN).
  for (uint64_t u = 0; u <= 0xffffffffull; u += 4099) {
    const float f = bitsFloat(static_cast<uint32_t>(u));
    ASSERT_EQ(floatToE4m3(f), sync::floatToE4m3(f)) << std::hex << u;
  }
  for (float f :
       {0.0f, -0.0f, 448.0f, 464.0f, 480.0f, 1.0f / 512, 1.0f / 1024, 3.0f / 2048,
        std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    EXPECT_EQ(floatToE4m3(f), sync::floatToE4m3(f)) << f;
    EXPECT_EQ(floatToE4m3(-f), sync::floatToE4m3(-f)) << -f;
  }
}

// The kernel's per-tile steps (amax without NaN, scale, element rounding)
// applied on the host give the reference's bytes and scales.
void quantizeLikeTheKernel(const std::vector<uint16_t>& src, int64_t rows, int64_t cols, int block,
                           std::vector<uint8_t>& dst, std::vector<float>& scales) {
  const int64_t br = (rows + block - 1) / block, bc = (cols + block - 1) / block;
  dst.assign(src.size(), 0);
  scales.assign(br * bc, 0);
  for (int64_t tile = 0; tile < br * bc; ++tile) {
    const int64_t r0 = tile / bc * block, c0 = tile % bc * block;
    const int64_t h = std::min<int64_t>(block, rows - r0), w = std::min<int64_t>(block, cols - c0);
    float amax = 0;
    for (int64_t k = h * w; k-- > 0;) {  // another order than the reference: max is exact
      const float a = absBf16(src[(r0 + k / w) * cols + c0 + k % w]);
      if (a > amax) amax = a;
    }
    const float scale = e4m3Scale(amax);
    scales[tile] = scale;
    for (int64_t k = 0; k < h * w; ++k) {
      const int64_t at = (r0 + k / w) * cols + c0 + k % w;
      dst[at] = quantizeBf16(src[at], scale);
    }
  }
}

TEST(GpuFp8Math, BlocksMatchTheReferenceAt64And128) {
  std::mt19937_64 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  for (int block : {64, 128}) {
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{300, 200}, {128, 128}, {1, 777}}) {
      std::vector<uint16_t> src(rows * cols);
      for (auto& x : src) x = sync::floatToBf16(normal(rng));
      // Special values: a NaN (ignored by amax), an inf (scale 1), zeros, an outlier.
      src[5] = 0x7fc0;
      src[src.size() / 2] = 0x7f80;
      for (int64_t c = 0; c < std::min<int64_t>(cols, 70); ++c) src[c + (rows > 1 ? cols : 0)] = 0;
      src[src.size() - 1] = sync::floatToBf16(1e30f);
      std::vector<uint8_t> want(src.size()), got;
      sync::Fp8BlockShape bs{rows, cols, block};
      std::vector<float> wantScales(bs.numScales()), gotScales;
      ASSERT_TRUE(sync::quantizeBf16ToE4m3(src, bs, want, wantScales).isOk());
      quantizeLikeTheKernel(src, rows, cols, block, got, gotScales);
      ASSERT_EQ(got, want) << rows << "x" << cols << " block " << block;
      ASSERT_EQ(gotScales.size(), wantScales.size());
      for (size_t i = 0; i < gotScales.size(); ++i) {
        ASSERT_EQ(floatBits(gotScales[i]), floatBits(wantScales[i])) << "scale " << i;
      }
    }
  }
}

uint64_t xxh3InPasses(const uint8_t* in, uint64_t len) {
  const uint8_t* s = xxh3DefaultSecret().data();
  const uint64_t nb = xxh3::fullBlocks(len);
  std::vector<uint64_t> contrib(8 * nb);  // pass 1: independent per block and lane
  for (uint64_t b = 0; b < nb; ++b) {
    for (int i = 0; i < 8; ++i) contrib[8 * b + i] = xxh3::blockContribution(in, b, s, i);
  }
  uint64_t acc[8];
  for (int i = 0; i < 8; ++i) {  // pass 2: per lane, in block order
    uint64_t a = xxh3::initLane(i);
    for (uint64_t b = 0; b < nb; ++b) a = xxh3::scramble(a + contrib[8 * b + i], s, i);
    acc[i] = a + xxh3::tailContribution(in, len, s, i);
  }
  return xxh3::merge(acc, len, s);
}

TEST(GpuXxh3Math, TwoPassesEqualXxh3Of64Bits) {
  std::mt19937_64 rng(3);
  std::vector<uint8_t> data(3 << 20);
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  std::vector<uint64_t> lens = {241, 255, 256, 1023, 1024, 1025, 2047, 2048, 2049, 4096 + 63};
  for (int i = 0; i < 40; ++i) lens.push_back(241 + rng() % 100000);
  lens.push_back(data.size() - 7);  // the longest that fits after every start below
  for (uint64_t len : lens) {
    for (uint64_t off : {uint64_t{0}, uint64_t{1}, uint64_t{7}}) {  // unaligned starts too
      ASSERT_EQ(xxh3InPasses(data.data() + off, len), XXH3_64bits(data.data() + off, len))
          << "len " << len << " offset " << off;
    }
  }
}

}  // namespace
}  // namespace tide::gpu
