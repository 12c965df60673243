#include "engine/data/batch.h"

#include <gtest/gtest.h>

namespace tide::data {
namespace {

Batch sample() {
  Batch b;
  orThrow(b.add("tokens", orThrow(Column::fromRows<int32_t>({{1, 2, 3}, {}, {4}, {5, 6}}))));
  orThrow(b.add("reward", orThrow(Column::fromDense<float>({0.5f, 1.f, -1.f, 2.f}, {4}))));
  orThrow(b.add("pair", orThrow(Column::fromDense<int64_t>({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2}))));
  b.meta()["step"] = 7;
  return b;
}

TEST(Column, RaggedRowsAreViewsIntoOneBuffer) {
  Batch b = sample();
  const Column& t = *orThrow(b.column("tokens"));
  EXPECT_EQ(t.rows(), 4);
  EXPECT_EQ(t.rowLength(0), 3);
  EXPECT_EQ(t.rowLength(1), 0);
  EXPECT_EQ(t.row<int32_t>(3)[1], 6);
  EXPECT_EQ(t.payloadBytes(), 6 * 4u);
  EXPECT_EQ(t.row<int32_t>(0).data() + 3, t.row<int32_t>(2).data());
}

TEST(Column, RaggedInnerShape) {
  std::vector<float> v(5 * 3);
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i);
  auto c = orThrow(Column::ragged(DType::kF32, {3}, BufferRef::ownVector(v),
                                  BufferRef::ownVector(std::vector<int64_t>{0, 2, 5})));
  EXPECT_EQ(c.itemBytes(), 12u);
  EXPECT_EQ(c.row<float>(1).size(), 9u);
  EXPECT_EQ(c.row<float>(1)[0], 6.f);
}

TEST(Column, RejectsBadOffsetsAndSizes) {
  auto vals = BufferRef::ownVector(std::vector<int32_t>{1, 2, 3});
  auto nonMono =
      Column::ragged(DType::kI32, {}, vals, BufferRef::ownVector(std::vector<int64_t>{0, 2, 1}));
  ASSERT_FALSE(nonMono.isOk());
  EXPECT_NE(nonMono.status().message().find("not monotonic"), std::string::npos);
  auto past =
      Column::ragged(DType::kI32, {}, vals, BufferRef::ownVector(std::vector<int64_t>{0, 4}));
  ASSERT_FALSE(past.isOk());
  auto dense = Column::dense(DType::kF32, {2, 3}, BufferRef::ownVector(std::vector<float>(5)));
  ASSERT_FALSE(dense.isOk());
  EXPECT_NE(dense.status().message().find("needs 24 bytes"), std::string::npos);
}

TEST(Batch, SelectSliceChunkKeepViewsAndMeta) {
  Batch b = sample();
  auto s = orThrow(b.selectFields({"reward"}));
  EXPECT_EQ(s.columns().size(), 1u);
  EXPECT_EQ(s.meta()["step"], 7);
  EXPECT_EQ(orThrow(s.column("reward"))->data().data, orThrow(b.column("reward"))->data().data);
  EXPECT_EQ(b.selectFields({"nope"}).status().code(), Code::kNotFound);

  auto sl = orThrow(b.slice(2, 4));
  EXPECT_EQ(sl.rows(), 2);
  EXPECT_EQ(orThrow(sl.column("tokens"))->row<int32_t>(1)[0], 5);
  EXPECT_EQ(orThrow(sl.column("pair"))->values<int64_t>()[0], 5);
  EXPECT_EQ(orThrow(sl.column("tokens"))->payloadBytes(), 12u);

  auto chunks = orThrow(b.chunk(3));
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[0].rows(), 2);
  EXPECT_EQ(chunks[2].rows(), 1);
  EXPECT_EQ(chunks[2].meta()["step"], 7);
  auto back = orThrow(Batch::concat(chunks));
  EXPECT_EQ(back.rows(), 4);
  EXPECT_EQ(orThrow(back.column("tokens"))->row<int32_t>(3)[1], 6);
  EXPECT_EQ(orThrow(back.column("pair"))->values<int64_t>()[7], 8);
}

TEST(Batch, GatherUnionAndErrors) {
  Batch b = sample();
  std::vector<int64_t> rows{3, 0};
  auto g = orThrow(b.gather(rows));
  EXPECT_EQ(orThrow(g.column("tokens"))->row<int32_t>(0)[0], 5);
  EXPECT_EQ(orThrow(g.column("tokens"))->row<int32_t>(1).size(), 3u);
  EXPECT_EQ(orThrow(g.column("reward"))->values<float>()[0], 2.f);

  Batch extra;
  orThrow(extra.add("old_log_prob",
                    orThrow(Column::fromRows<float>({{.1f, .2f, .3f}, {}, {.4f}, {.5f, .6f}}))));
  auto u = orThrow(b.unionWith(extra));
  EXPECT_EQ(u.columns().size(), 4u);
  auto again = orThrow(u.unionWith(b));  // same bytes: fine
  EXPECT_EQ(again.columns().size(), 4u);

  Batch wrong;
  orThrow(wrong.add("x", orThrow(Column::fromDense<float>({1, 2}, {2}))));
  EXPECT_FALSE(b.unionWith(wrong).isOk());
  EXPECT_EQ(b.add("reward", *orThrow(b.column("reward"))).code(), Code::kAlreadyExists);
  Batch c = sample();
  EXPECT_EQ(c.add("short", *orThrow(wrong.column("x"))).code(), Code::kInvalidArgument);
  EXPECT_FALSE(b.slice(3, 5).isOk());
  std::vector<Batch> mixed{b, wrong};
  EXPECT_FALSE(Batch::concat(mixed).isOk());
}

}  // namespace
}  // namespace tide::data
