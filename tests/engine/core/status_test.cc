#include "engine/core/status.h"

#include <gtest/gtest.h>

namespace tide {
namespace {

Result<int> half(int v) {
  if (v % 2) return TIDE_ERROR(Code::kInvalidArgument, "odd");
  return v / 2;
}

Result<int> quarter(int v) {
  TIDE_ASSIGN_OR_RETURN(int h, half(v));
  return half(h);
}

TEST(Status, OkIsCheap) {
  Status s;
  EXPECT_TRUE(s.isOk());
  EXPECT_EQ(s.toString(), "ok");
}

TEST(Status, CarriesCodeMessageAndLocation) {
  Status s = TIDE_ERROR(Code::kTimeout, "peer 3 silent");
  EXPECT_FALSE(s.isOk());
  EXPECT_EQ(s.code(), Code::kTimeout);
  EXPECT_NE(s.toString().find("timeout: peer 3 silent (status_test.cc:"), std::string::npos);
  EXPECT_EQ(s.withContext("batch 7").message(), "batch 7: peer 3 silent");
}

TEST(Result, PropagatesErrors) {
  EXPECT_EQ(*quarter(8), 2);
  auto r = quarter(6);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
}

TEST(Result, OrThrowThrowsStatusError) {
  EXPECT_THROW(orThrow(half(3)), StatusError);
  EXPECT_EQ(orThrow(half(4)), 2);
}

}  // namespace
}  // namespace tide
