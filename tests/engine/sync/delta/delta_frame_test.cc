#include "engine/sync/delta/delta_frame.h"

#include <gtest/gtest.h>

#include "tests/engine/sync/delta/bf16_update.h"

namespace tide::sync {
namespace {

// Eight "experts" of three tensors each; only experts 2 and 5 received tokens.
struct MoeFixture {
  std::vector<testing::Bf16Versions> v;
  std::vector<std::vector<uint32_t>> items;
  std::vector<TensorVersions> tensors;
  MoeFixture() {
    for (uint32_t e = 0; e < 8; ++e) {
      std::vector<uint32_t> item;
      for (uint32_t t = 0; t < 3; ++t) {
        auto tv = testing::adamLikeStep(4096, 1e-2, 100 + e * 3 + t);
        if (e != 2 && e != 5) tv.next = tv.old;  // no gradient: bit-identical
        item.push_back(static_cast<uint32_t>(v.size()));
        v.push_back(std::move(tv));
      }
      items.push_back(item);
    }
    for (auto& tv : v) tensors.push_back({tv.old, tv.next, 2});
  }
  std::vector<std::vector<uint8_t>> olds() const {
    std::vector<std::vector<uint8_t>> o;
    for (auto& tv : v) o.push_back(tv.old);
    return o;
  }
};

std::vector<std::span<uint8_t>> spans(std::vector<std::vector<uint8_t>>& bufs) {
  std::vector<std::span<uint8_t>> s;
  for (auto& b : bufs) s.emplace_back(b);
  return s;
}

TEST(DeltaFrame, UnchangedExpertsCostOneBitEach) {
  MoeFixture f;
  std::vector<uint8_t> frame;
  auto st = encodeFrame(f.tensors, f.items, 7, 8, {}, frame);
  ASSERT_TRUE(st.isOk()) << st.status().toString();
  EXPECT_EQ(st->items, 8u);
  EXPECT_EQ(st->changedItems, 2u);
  EXPECT_EQ(st->byEncoding[0] + st->byEncoding[1] + st->byEncoding[2] + st->byEncoding[3], 6u);

  // The same frame with nothing changed: header + a one-byte item bitmap.
  std::vector<TensorVersions> same;
  for (auto& tv : f.v) same.push_back({tv.old, tv.old, 2});
  std::vector<uint8_t> empty;
  auto st0 = encodeFrame(same, f.items, 7, 8, {}, empty);
  EXPECT_EQ(st0->changedItems, 0u);
  EXPECT_EQ(empty.size(), 40u + 1u);

  auto bufs = f.olds();
  ASSERT_TRUE(applyFrame(frame, spans(bufs), f.items, 7, 8).isOk());
  for (size_t i = 0; i < bufs.size(); ++i) EXPECT_EQ(bufs[i], f.v[i].next) << i;
}

TEST(DeltaFrame, CorruptionOrWrongVersionLeavesEveryTargetUntouched) {
  MoeFixture f;
  std::vector<uint8_t> frame;
  ASSERT_TRUE(encodeFrame(f.tensors, f.items, 1, 2, {}, frame).isOk());
  auto bufs = f.olds();
  const auto original = bufs;

  auto bad = frame;
  bad[bad.size() / 2] ^= 1;
  EXPECT_EQ(applyFrame(bad, spans(bufs), f.items, 1, 2).code(), Code::kDataLoss);
  EXPECT_EQ(bufs, original);

  EXPECT_EQ(applyFrame(frame, spans(bufs), f.items, 2, 3).code(), Code::kFailedPrecondition);
  std::vector<uint8_t> cut(frame.begin(), frame.end() - 1);
  EXPECT_EQ(applyFrame(cut, spans(bufs), f.items, 1, 2).code(), Code::kDataLoss);
  EXPECT_EQ(bufs, original);

  // A later tensor on the wrong base: nothing is applied, not even earlier tensors.
  bufs[f.items[5][2]][0] ^= 1;
  auto withWrongBase = bufs;
  Status s = applyFrame(frame, spans(bufs), f.items, 1, 2);
  EXPECT_EQ(s.code(), Code::kDataLoss);
  EXPECT_NE(s.message().find("base mismatch"), std::string::npos);
  EXPECT_EQ(bufs, withWrongBase);
}

}  // namespace
}  // namespace tide::sync
