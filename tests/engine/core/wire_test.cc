// The records processes exchange through the rendezvous store: what one
// writes the other reads back exactly, and a truncated, garbled, foreign or
// newer record is one kDataLoss error that says what was wrong.

#include "engine/core/wire.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace tide {
namespace {

std::string sample() {
  WireWriter w(WireKind::kTiming);
  w.u32(7).u64(uint64_t{1} << 40).i32(-3).f64(0.1);
  return w.take();
}

Status readSample(std::string_view bytes, WireKind kind = WireKind::kTiming) {
  WireReader r(bytes, kind, "timing record");
  uint32_t a;
  uint64_t b;
  int32_t c;
  double d;
  r.u32(a);
  r.u64(b);
  r.i32(c);
  r.f64(d);
  return r.finish();
}

void expectDataLoss(const Status& s, const std::string& words) {
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.code(), Code::kDataLoss);
  EXPECT_NE(s.toString().find(words), std::string::npos) << s.toString();
}

TEST(Wire, RoundTripsEveryField) {
  const std::string bytes = sample();
  EXPECT_EQ(bytes.size(), kWireHeaderBytes + 4 + 8 + 4 + 8);
  WireReader r(bytes, WireKind::kTiming, "timing record");
  uint32_t a = 0;
  uint64_t b = 0;
  int32_t c = 0;
  double d = 0;
  EXPECT_TRUE(r.u32(a) && r.u64(b) && r.i32(c) && r.f64(d));
  EXPECT_TRUE(r.finish().isOk());
  EXPECT_EQ(a, 7u);
  EXPECT_EQ(b, uint64_t{1} << 40);
  EXPECT_EQ(c, -3);
  EXPECT_EQ(d, 0.1);  // bit-exact
}

TEST(Wire, TruncatedRecordsSayWhere) {
  const std::string bytes = sample();
  expectDataLoss(readSample(bytes.substr(0, 2)), "truncated header");
  for (size_t n = kWireHeaderBytes; n < bytes.size(); ++n) {
    expectDataLoss(readSample(bytes.substr(0, n)), "truncated at byte");
  }
  expectDataLoss(readSample(""), "bad timing record");
}

TEST(Wire, LeftOverBytesAreAnError) {
  expectDataLoss(readSample(sample() + "x"), "1 bytes left over");
}

TEST(Wire, ForeignAndNewerRecordsAreRefused) {
  std::string bytes = sample();
  bytes[0] = '1';  // the old plain-text records began with a digit
  expectDataLoss(readSample(bytes), "not a tide record");
  bytes = sample();
  bytes[1] = static_cast<char>(kWireVersion + 1);
  expectDataLoss(readSample(bytes), "format version " + std::to_string(kWireVersion + 1) +
                                        ", this build reads version " +
                                        std::to_string(kWireVersion));
  expectDataLoss(readSample(sample(), WireKind::kSetup), "record kind 1, expected 2");
}

TEST(Wire, NonFiniteNumbersAreRefused) {
  for (double bad :
       {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    WireWriter w(WireKind::kWindow);
    w.f64(bad);
    const std::string bytes = w.take();
    WireReader r(bytes, WireKind::kWindow, "window record");
    double v = 1.5;
    EXPECT_FALSE(r.f64(v));
    EXPECT_EQ(v, 1.5);  // left alone
    expectDataLoss(r.finish(), "not a finite number at byte 4");
  }
}

// Every single-byte corruption of a record is either read as some record
// (a flipped value) or refused; nothing reads past the end.
TEST(Wire, GarbledBytesNeverReadPastTheEnd) {
  const std::string bytes = sample();
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string g = bytes;
      g[i] = static_cast<char>(g[i] ^ (1 << bit));
      const Status s = readSample(g);
      if (!s.isOk()) {
        EXPECT_EQ(s.code(), Code::kDataLoss);
      }
      if (i < kWireHeaderBytes) {
        EXPECT_FALSE(s.isOk()) << "header byte " << i;
      }
    }
  }
}

}  // namespace
}  // namespace tide
