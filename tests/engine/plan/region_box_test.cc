#include <gtest/gtest.h>

#include "engine/plan/transfer_plan.h"

namespace tide::plan {
namespace {

RegionBox box2(Coord r0, Coord r1, Coord c0, Coord c1) {
  RegionBox b;
  b.ndim = 2;
  b.lo = {r0, c0, 0, 0};
  b.hi = {r1, c1, 0, 0};
  return b;
}

TEST(RegionBox, OverlapCases) {
  const RegionBox a = box2(0, 4, 0, 8);
  RegionBox out;
  // Touching edges are disjoint (half-open).
  EXPECT_FALSE(a.overlaps(box2(4, 8, 0, 8)));
  EXPECT_FALSE(intersect(a, box2(0, 4, 8, 16), &out));
  // Contained.
  ASSERT_TRUE(intersect(a, box2(1, 2, 3, 5), &out));
  EXPECT_EQ(out, box2(1, 2, 3, 5));
  EXPECT_TRUE(a.contains(out));
  // Partial in both dims.
  ASSERT_TRUE(intersect(a, box2(2, 10, 6, 20), &out));
  EXPECT_EQ(out, box2(2, 4, 6, 8));
  EXPECT_EQ(out.volume(), 4u);
  EXPECT_FALSE(a.contains(box2(2, 10, 6, 20)));
  // Overlap in one dim only.
  EXPECT_FALSE(intersect(a, box2(1, 3, 9, 12), &out));
  // Different ranks never overlap.
  RegionBox one;
  one.ndim = 1;
  one.hi[0] = 100;
  EXPECT_FALSE(a.overlaps(one));
  EXPECT_FALSE(intersect(a, one, &out));
  // Empty boxes.
  EXPECT_TRUE(box2(3, 3, 0, 8).empty());
  EXPECT_EQ(box2(3, 3, 0, 8).volume(), 0u);
  // Scalars (0-D) hold one element.
  RegionBox s;
  EXPECT_EQ(s.volume(), 1u);
  EXPECT_EQ(a.toString(), "[0:4, 0:8)");
}

TEST(RegionBox, ConvertsFromWorkloadsBox) {
  workloads::Box b{{1, 2, 3}, {4, 5, 6}};
  auto r = RegionBox::from(b);
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(r->ndim, 3);
  EXPECT_EQ(r->volume(), 27u);
  EXPECT_EQ(r->toBox(), b);
  workloads::Box five{{0, 0, 0, 0, 0}, {1, 1, 1, 1, 1}};
  EXPECT_FALSE(RegionBox::from(five).isOk());
  workloads::Box ragged{{0, 0}, {1}};
  EXPECT_FALSE(RegionBox::from(ragged).isOk());
  // Coordinates are 32-bit: a box past 2^32 - 1 is refused, not truncated.
  workloads::Box edge{{0}, {kMaxCoord}};
  ASSERT_TRUE(RegionBox::from(edge).isOk());
  EXPECT_EQ(RegionBox::from(edge)->volume(), kMaxCoord);
  workloads::Box wide{{0}, {kMaxCoord + 1}};
  auto bad = RegionBox::from(wide);
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().toString().find("2^32"), std::string::npos) << bad.status().toString();
}

}  // namespace
}  // namespace tide::plan
