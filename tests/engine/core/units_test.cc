#include "engine/core/units.h"

#include <gtest/gtest.h>

namespace tide {
namespace {

TEST(Units, ParsesSizes) {
  EXPECT_EQ(*parseSize("1GiB"), kGiB);
  EXPECT_EQ(*parseSize("4MiB"), 4 * kMiB);
  EXPECT_EQ(*parseSize("64KiB"), 64 * kKiB);
  EXPECT_EQ(*parseSize("1GB"), 1000000000ull);
  EXPECT_EQ(*parseSize("12"), 12u);
  EXPECT_EQ(*parseSize("0B"), 0u);
  EXPECT_EQ(*parseSize("1.5KiB"), 1536u);
  EXPECT_EQ(*parseSize(" 2 MB "), 2000000u);
}

TEST(Units, RejectsBadSizes) {
  for (const char* bad : {"12XB", "-1", "-4MiB", "", "GiB", "1.3B", "1e30GB", "+5"}) {
    auto r = parseSize(bad);
    EXPECT_FALSE(r.isOk()) << bad;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << bad;
  }
  EXPECT_NE(parseSize("12XB").status().message().find("unknown size unit 'xb'"), std::string::npos);
}

TEST(Units, ParsesCountsAndRates) {
  EXPECT_EQ(*parseCount("16"), 16u);
  EXPECT_FALSE(parseCount("-3").isOk());
  EXPECT_FALSE(parseCount("3x").isOk());
  EXPECT_DOUBLE_EQ(*parseRate("400Gbps"), 50e9);
  EXPECT_DOUBLE_EQ(*parseRate("50GB/s"), 50e9);
  EXPECT_FALSE(parseRate("10furlongs").isOk());
  // b is bits, B is bytes; the prefix's case does not matter.
  EXPECT_DOUBLE_EQ(*parseRate("400Gb/s"), 50e9);
  EXPECT_DOUBLE_EQ(*parseRate("400gbps"), 50e9);
  EXPECT_DOUBLE_EQ(*parseRate("400 Gbit/s"), 50e9);
  EXPECT_DOUBLE_EQ(*parseRate("50GBps"), 50e9);
  EXPECT_DOUBLE_EQ(*parseRate("50gB/s"), 50e9);
  EXPECT_DOUBLE_EQ(*parseRate("50 GByte/s"), 50e9);
  EXPECT_DOUBLE_EQ(*parseRate("100Mbps"), 12.5e6);
  EXPECT_DOUBLE_EQ(*parseRate("3.35TB/s"), 3.35e12);
  EXPECT_DOUBLE_EQ(*parseRate("1.6Tbps"), 200e9);
  EXPECT_DOUBLE_EQ(*parseRate("8b/s"), 1.0);
  EXPECT_DOUBLE_EQ(*parseRate("3B/s"), 3.0);
  EXPECT_FALSE(parseRate("50G").isOk());
  EXPECT_FALSE(parseRate("50Gx/s").isOk());
  EXPECT_FALSE(parseRate("0Gbps").isOk());
  EXPECT_NE(parseRate("10").status().message().find("needs a unit"), std::string::npos);
  EXPECT_FALSE(parseRate("50Gxit/s").isOk());
  EXPECT_FALSE(parseRate("50Gzyte/s").isOk());
  EXPECT_NE(parseRate("47.5GB").status().message().find("unit 'GB'"), std::string::npos);
  EXPECT_NE(parseRate(" 10 ").status().message().find("needs a unit"), std::string::npos);
}

TEST(Units, SizesAreBytesNotBits) {
  EXPECT_EQ(*parseSize("1kB"), 1000u);
  EXPECT_EQ(*parseSize("1giB"), 1u << 30);  // prefixes in any case
  for (const char* bits : {"1Gb", " 2 mb ", "1Gib", "8b"}) {
    auto r = parseSize(bits);
    ASSERT_FALSE(r.isOk()) << bits;
    EXPECT_NE(r.status().message().find("is bits"), std::string::npos) << r.status().message();
  }
}

TEST(Units, FormatsBytesAndBandwidth) {
  EXPECT_EQ(formatBytes(kGiB), "1 GiB");
  EXPECT_EQ(formatBytes(1500), "1500 B");
  EXPECT_EQ(formatBytes(kMiB + 7), "1 MiB");
  EXPECT_DOUBLE_EQ(gbps(2000000000ull, 2.0), 1.0);
}

}  // namespace
}  // namespace tide
