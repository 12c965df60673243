#include "engine/sync/delta/delta_codec.h"

#include <gtest/gtest.h>

#include <random>

#include "tests/engine/sync/delta/bf16_update.h"

namespace tide::sync {
namespace {

std::vector<uint8_t> randomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

// Changes `count` random elements of `v` (element size e).
std::vector<uint8_t> mutate(std::vector<uint8_t> v, uint32_t e, size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  size_t n = v.size() / e;
  for (size_t k = 0; k < count && n; ++k) {
    size_t i = rng() % n;
    v[i * e + rng() % e] ^= static_cast<uint8_t>(1 + rng() % 255);
  }
  return v;
}

struct Case {
  uint32_t elem;
  size_t elements;
  size_t changes;
  DeltaEncoding force;
  bool zstd;
};

class DeltaRoundTrip : public ::testing::TestWithParam<Case> {};

TEST_P(DeltaRoundTrip, AppliesToExactlyTheNewVersion) {
  const Case c = GetParam();
  auto old = randomBytes(c.elements * c.elem, 11);
  auto next = mutate(old, c.elem, c.changes, 12);
  std::vector<uint8_t> block;
  DeltaOptions opt;
  opt.force = c.force;
  opt.zstd = c.zstd;
  auto st = encodeDelta(old, next, c.elem, opt, block);
  ASSERT_TRUE(st.isOk()) << st.status().toString();
  EXPECT_EQ(st->encodedBytes, block.size());
  auto target = old;
  auto used = applyDelta(block, target);
  ASSERT_TRUE(used.isOk()) << used.status().toString();
  EXPECT_EQ(*used, block.size());
  EXPECT_EQ(target, next);
}

INSTANTIATE_TEST_SUITE_P(Encodings, DeltaRoundTrip,
                         ::testing::Values(Case{2, 0, 0, DeltaEncoding::kUnchanged, false},
                                           Case{2, 1, 1, DeltaEncoding::kUnchanged, false},
                                           Case{2, 1000003, 17, DeltaEncoding::kUnchanged, false},
                                           Case{2, 1000003, 17, DeltaEncoding::kBitmap, false},
                                           Case{2, 1000003, 17, DeltaEncoding::kIndices, false},
                                           Case{2, 1000003, 17, DeltaEncoding::kDenseXor, true},
                                           Case{1, 4097, 300, DeltaEncoding::kUnchanged, false},
                                           Case{1, 4097, 300, DeltaEncoding::kIndices, true},
                                           Case{4, 999, 999, DeltaEncoding::kUnchanged, false},
                                           Case{8, 77, 5, DeltaEncoding::kBitmap, true},
                                           Case{2, 65536, 60000, DeltaEncoding::kUnchanged, true}));

TEST(DeltaCodec, ChoosesEncodingBySize) {
  auto old = randomBytes(2 * 1000000, 1);
  std::vector<uint8_t> block;
  auto same = encodeDelta(old, old, 2, {}, block);
  EXPECT_EQ(same->encoding, DeltaEncoding::kUnchanged);
  EXPECT_LE(same->encodedBytes, 80u);
  auto sparse = encodeDelta(old, mutate(old, 2, 100, 2), 2, {}, block);
  EXPECT_EQ(sparse->encoding, DeltaEncoding::kIndices);
  auto medium = encodeDelta(old, mutate(old, 2, 200000, 3), 2, {}, block);
  EXPECT_EQ(medium->encoding, DeltaEncoding::kBitmap);
  DeltaOptions z;
  z.zstd = true;
  auto dense = encodeDelta(old, mutate(old, 2, 900000, 4), 2, z, block);
  EXPECT_EQ(dense->encoding, DeltaEncoding::kDenseXor);
}

TEST(DeltaCodec, RealisticBf16StepIsSparseAndSmall) {
  auto v = testing::adamLikeStep(1 << 20, 1e-3, 5);
  std::vector<uint8_t> block;
  auto st = encodeDelta(v.old, v.next, 2, {}, block);
  ASSERT_TRUE(st.isOk());
  // BF16 keeps 8 mantissa bits: a 1e-3 relative step changes a minority of elements.
  EXPECT_GT(st->changedFraction(), 0.0);
  EXPECT_LT(st->changedFraction(), 0.5);
  EXPECT_LT(st->encodedBytes, v.next.size());
  auto target = v.old;
  ASSERT_TRUE(applyDelta(block, target).isOk());
  EXPECT_EQ(target, v.next);
}

TEST(DeltaCodec, RejectsCorruptTruncatedOrWrongBaseWithoutTouchingTarget) {
  auto old = randomBytes(2 * 5000, 21);
  auto next = mutate(old, 2, 40, 22);
  std::vector<uint8_t> block;
  ASSERT_TRUE(encodeDelta(old, next, 2, {}, block).isOk());

  auto corrupt = block;
  corrupt.back() ^= 0x40;
  auto target = old;
  auto r = applyDelta(corrupt, target);
  EXPECT_EQ(r.status().code(), Code::kDataLoss);
  EXPECT_EQ(target, old);

  auto truncated = std::vector<uint8_t>(block.begin(), block.end() - 3);
  r = applyDelta(truncated, target);
  EXPECT_EQ(r.status().code(), Code::kDataLoss);
  EXPECT_NE(r.status().message().find("truncated"), std::string::npos);
  EXPECT_EQ(target, old);

  auto wrongBase = mutate(old, 2, 1, 99);
  auto before = wrongBase;
  r = applyDelta(block, wrongBase);
  EXPECT_EQ(r.status().code(), Code::kDataLoss);
  EXPECT_NE(r.status().message().find("base mismatch"), std::string::npos);
  EXPECT_EQ(wrongBase, before);

  std::vector<uint8_t> small(10);
  EXPECT_EQ(applyDelta(block, small).status().code(), Code::kInvalidArgument);
  EXPECT_FALSE(applyDelta(std::span<const uint8_t>(), target).isOk());
}

TEST(DeltaCodec, RejectsBadInputs) {
  std::vector<uint8_t> a(10), b(12), out;
  EXPECT_EQ(encodeDelta(a, b, 2, {}, out).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(encodeDelta(a, a, 3, {}, out).status().code(), Code::kInvalidArgument);
  std::vector<uint8_t> odd(5);
  EXPECT_EQ(encodeDelta(odd, odd, 2, {}, out).status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace tide::sync
