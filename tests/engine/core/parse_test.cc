#include "engine/core/parse.h"

#include <gtest/gtest.h>

#include <string>

namespace tide {
namespace {

// Every refusal is one kInvalidArgument naming what was parsed.
template <typename T>
void expectRefused(const Result<T>& r, const std::string& text) {
  ASSERT_FALSE(r.isOk()) << "'" << text << "' was accepted";
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << text;
  EXPECT_NE(r.status().message().find("malformed thing"), std::string::npos)
      << r.status().message();
}

TEST(Parse, Unsigned) {
  EXPECT_EQ(*parseUnsigned("0", "thing"), 0u);
  EXPECT_EQ(*parseUnsigned("18446744073709551615", "thing"), UINT64_MAX);
  EXPECT_EQ(*parseUnsigned("00ff", "thing", 16), 255u);
  EXPECT_EQ(*parseUnsigned("65535", "thing", 10, 65535), 65535u);
  for (const char* bad : {"", " ", "abc", "12abc", "12 ", " 12", "-1", "+1", "0x10", "1.5",
                          "18446744073709551616", "99999999999999999999999"}) {
    expectRefused(parseUnsigned(bad, "thing"), bad);
  }
  expectRefused(parseUnsigned("65536", "thing", 10, 65535), "65536 > max");
  expectRefused(parseUnsigned("g", "thing", 16), "g in hex");
  EXPECT_NE(parseUnsigned("18446744073709551616", "thing").status().message().find("out of range"),
            std::string::npos);
}

TEST(Parse, Signed) {
  EXPECT_EQ(*parseSigned("-42", "thing"), -42);
  EXPECT_EQ(*parseSigned("9223372036854775807", "thing"), INT64_MAX);
  EXPECT_EQ(*parseSigned("-9223372036854775808", "thing"), INT64_MIN);
  for (const char* bad :
       {"", "-", "--1", "+1", "1-", "1e3", "9223372036854775808", "-9223372036854775809", "7 "}) {
    expectRefused(parseSigned(bad, "thing"), bad);
  }
}

TEST(Parse, Double) {
  EXPECT_DOUBLE_EQ(*parseDouble("1.5", "thing"), 1.5);
  EXPECT_DOUBLE_EQ(*parseDouble("-2e-3", "thing"), -2e-3);
  EXPECT_DOUBLE_EQ(*parseDouble("12345.678901234567", "thing"), 12345.678901234567);
  for (const char* bad : {"", ".", "1.5x", "x1.5", " 1", "1e400", "inf", "nan", "-inf", "1,5"}) {
    expectRefused(parseDouble(bad, "thing"), bad);
  }
}

TEST(Parse, QuotesBinaryTextBoundedly) {
  std::string junk(1000, '\x01');
  auto r = parseUnsigned(junk, "thing");
  ASSERT_FALSE(r.isOk());
  EXPECT_LT(r.status().message().size(), 200u);
  EXPECT_EQ(r.status().message().find('\x01'), std::string::npos);
}

}  // namespace
}  // namespace tide
