#include "engine/sync/fp8_quantizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace tide::sync {
namespace {

// Reference path, independent of the implementation: decode all 256 codes
// with pow() in double, then pick the nearest finite code by search
// (ties to the code with the even mantissa), saturating.
struct Reference {
  double value[256];
  Reference() {
    for (int c = 0; c < 256; ++c) {
      const int s = c >> 7, e = (c >> 3) & 15, m = c & 7;
      double v = e == 0 ? (m / 8.0) * std::pow(2.0, -6) : (1.0 + m / 8.0) * std::pow(2.0, e - 7);
      if (e == 15 && m == 7) v = std::numeric_limits<double>::quiet_NaN();
      value[c] = s ? -v : v;
    }
  }
  uint8_t encode(float x) const {
    if (std::isnan(x)) return std::signbit(x) ? 0xff : 0x7f;
    const uint8_t sign = std::signbit(x) ? 0x80 : 0;
    const double a = std::fabs(static_cast<double>(x));
    if (a >= value[0x7e]) return sign | 0x7e;  // saturating (covers infinity)
    int best = 0;
    for (int c = 1; c <= 0x7e; ++c) {
      const double d = std::fabs(value[c] - a), bd = std::fabs(value[best] - a);
      if (d < bd || (d == bd && (c & 1) == 0 && (best & 1) == 1)) best = c;
    }
    return static_cast<uint8_t>(sign | best);
  }
};

float bitsToFloat(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

TEST(Fp8, TableMatchesSpec) {
  Reference ref;
  EXPECT_EQ(ref.value[0x7e], 448.0);
  EXPECT_EQ(ref.value[0x01], std::pow(2.0, -9));
  EXPECT_EQ(ref.value[0x08], std::pow(2.0, -6));
  for (int c = 0; c < 256; ++c) {
    const float f = e4m3ToFloat(static_cast<uint8_t>(c));
    if (std::isnan(ref.value[c])) {
      EXPECT_TRUE(std::isnan(f)) << c;
    } else {
      EXPECT_EQ(static_cast<double>(f), ref.value[c]) << c;
      EXPECT_EQ(floatToE4m3(f), c) << "round trip of code " << c;
    }
  }
}

TEST(Fp8, EveryBf16ValueBitExact) {
  Reference ref;
  for (uint32_t b = 0; b < 65536; ++b) {
    const float x = bf16ToFloat(static_cast<uint16_t>(b));
    ASSERT_EQ(floatToE4m3(x), ref.encode(x)) << "bf16 0x" << std::hex << b << " = " << x;
    // Also in the range a block scale maps values into.
    const float y = x * 37.25f;
    ASSERT_EQ(floatToE4m3(y), ref.encode(y)) << y;
  }
}

TEST(Fp8, RandomFloatsAndTiesBitExact) {
  Reference ref;
  std::mt19937 rng(7);
  for (int i = 0; i < 300000; ++i) {
    // Exponents around the e4m3 range, full float mantissas.
    const uint32_t exp = 127 - 14 + rng() % 26;
    const float x = bitsToFloat((rng() & 0x80000000u) | (exp << 23) | (rng() & 0x7fffff));
    ASSERT_EQ(floatToE4m3(x), ref.encode(x)) << x;
  }
  // Exact midpoints between neighbouring codes round to the even code.
  for (int c = 0; c < 0x7e; ++c) {
    const float mid = static_cast<float>((ref.value[c] + ref.value[c + 1]) / 2);
    ASSERT_EQ(floatToE4m3(mid), ref.encode(mid)) << mid;
    ASSERT_EQ(floatToE4m3(mid) & 1, 0) << mid;
  }
  EXPECT_EQ(floatToE4m3(1e30f), 0x7e);
  EXPECT_EQ(floatToE4m3(-std::numeric_limits<float>::infinity()), 0xfe);
  EXPECT_EQ(floatToE4m3(464.0f), 0x7e);  // would round past 448: saturates
  EXPECT_EQ(floatToE4m3(std::nanf("")) & 0x7f, 0x7f);
  EXPECT_EQ(floatToE4m3(-0.0f), 0x80);
}

// Reference block quantizer: plain loops over the element list of each block.
void referenceQuantize(const std::vector<uint16_t>& src, const Fp8BlockShape& s,
                       std::vector<uint8_t>& dst, std::vector<float>& scales) {
  Reference ref;
  dst.assign(src.size(), 0);
  scales.assign(s.numScales(), 0);
  for (int64_t br = 0; br < s.blockRows(); ++br) {
    for (int64_t bc = 0; bc < s.blockCols(); ++bc) {
      std::vector<int64_t> idx;
      for (int64_t r = br * s.block; r < std::min(s.rows, (br + 1) * s.block); ++r) {
        for (int64_t c = bc * s.block; c < std::min(s.cols, (bc + 1) * s.block); ++c) {
          idx.push_back(r * s.cols + c);
        }
      }
      float amax = 0;
      for (int64_t i : idx) {
        const float v = std::fabs(bf16ToFloat(src[i]));
        if (!std::isnan(v)) amax = std::max(amax, v);
      }
      const float scale = (amax > 0 && !std::isinf(amax)) ? amax / 448.0f : 1.0f;
      scales[br * s.blockCols() + bc] = scale;
      for (int64_t i : idx) dst[i] = ref.encode(bf16ToFloat(src[i]) / scale);
    }
  }
}

TEST(Fp8, BlockQuantizerBitExact) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  for (auto shape : {Fp8BlockShape{300, 200, 128}, Fp8BlockShape{64, 64, 64},
                     Fp8BlockShape{1, 1000, 128}, Fp8BlockShape{17, 5, 4}}) {
    std::vector<uint16_t> src(shape.rows * shape.cols);
    for (auto& v : src) v = floatToBf16(normal(rng) * (rng() % 7 == 0 ? 100.0f : 1.0f));
    src[0] = floatToBf16(0.0f);
    if (src.size() > 10) {
      src[3] = floatToBf16(std::numeric_limits<float>::infinity());
      src[7] = floatToBf16(std::nanf(""));
    }
    std::vector<uint8_t> dst(src.size()), want;
    std::vector<float> scales(shape.numScales()), wantScales;
    ASSERT_TRUE(quantizeBf16ToE4m3(src, shape, dst, scales).isOk());
    referenceQuantize(src, shape, want, wantScales);
    ASSERT_EQ(scales, wantScales);
    ASSERT_EQ(dst, want);
    // Dequantized values are within one e4m3 step (1/8 relative, plus the
    // subnormal floor) of the input.
    for (size_t i = 0; i < src.size(); ++i) {
      const float x = bf16ToFloat(src[i]);
      if (!std::isfinite(x)) continue;
      const int64_t r = i / shape.cols, c = i % shape.cols;
      const float sc = scales[(r / shape.block) * shape.blockCols() + c / shape.block];
      const float back = e4m3ToFloat(dst[i]) * sc;
      ASSERT_LE(std::fabs(back - x), std::fabs(x) / 16 + sc * std::ldexp(1.0f, -10)) << i;
    }
  }
}

TEST(Fp8, RejectsMismatchedBuffers) {
  std::vector<uint16_t> src(10);
  std::vector<uint8_t> dst(9);
  std::vector<float> scales(1);
  EXPECT_FALSE(quantizeBf16ToE4m3(src, Fp8BlockShape{2, 5, 8}, dst, scales).isOk());
  dst.resize(10);
  EXPECT_TRUE(quantizeBf16ToE4m3(src, Fp8BlockShape{2, 5, 8}, dst, scales).isOk());
  EXPECT_FALSE(quantizeBf16ToE4m3(src, Fp8BlockShape{2, 5, 0}, dst, scales).isOk());
}

}  // namespace
}  // namespace tide::sync
