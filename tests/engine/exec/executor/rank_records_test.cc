// A rank's step and events as they cross the rendezvous store: read back
// exactly, and a truncated, garbled or old-format record is refused with
// the reason (never trusted, never a crash or a huge allocation).

#include "engine/exec/executor/rank_records.h"

#include <gtest/gtest.h>

#include <cstring>

#include "engine/core/wire.h"

namespace tide::exec {
namespace {

traces::Event event(int i) {
  traces::Event e;
  e.tStart = 0.5 * i;
  e.tEnd = 0.5 * i + 0.25;
  e.src = i;
  e.dst = -1;
  e.bytes = uint64_t{1} << (20 + i);
  e.stage = 2 * i;
  e.step = 3;
  e.path = static_cast<traces::EventPath>(i % traces::kEventPathCount);
  e.unit = i == 0 ? -1 : 7 * i;
  e.piece = static_cast<uint32_t>(i);
  return e;
}

void expectDataLoss(const Status& s, const std::string& words) {
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.code(), Code::kDataLoss);
  EXPECT_NE(s.toString().find(words), std::string::npos) << s.toString();
}

TEST(RankRecords, TimingRoundTrips) {
  TimingRecord t{1.25, 2.5, 100, 7, 0.125, 200, 300, 40, 5, 64, 0.0625, 0.03125};
  auto back = decodeTiming(encodeTiming(t));
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_EQ(back->tStart, 1.25);
  EXPECT_EQ(back->tEnd, 2.5);
  EXPECT_EQ(back->bytesSent, 100u);
  EXPECT_EQ(back->bytesLocal, 7u);
  EXPECT_EQ(back->verifySeconds, 0.125);
  EXPECT_EQ(back->bytesFull, 200u);
  EXPECT_EQ(back->bytesRead, 300u);
  EXPECT_EQ(back->elements, 40u);
  EXPECT_EQ(back->changed, 5u);
  EXPECT_EQ(back->bytesVerified, 64u);
  EXPECT_EQ(back->stageOutSeconds, 0.0625);
  EXPECT_EQ(back->stageInSeconds, 0.03125);
}

TEST(RankRecords, OldTextAndOtherKindsAreRefused) {
  expectDataLoss(decodeTiming("1.25 2.5 100 7 0.125 200 300 40 5 64").status(),
                 "bad timing record: not a tide record");
  expectDataLoss(decodeTiming(encodeSetup({3, 4096, 0.5})).status(), "record kind 2, expected 1");
  expectDataLoss(decodeTiming(encodeTiming({}).substr(0, 20)).status(), "truncated at byte");
}

TEST(RankRecords, EventsRoundTripFieldByField) {
  std::vector<traces::Event> in;
  for (int i = 0; i < 5; ++i) in.push_back(event(i));
  auto back = decodeEvents(encodeEvents(in));
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  ASSERT_EQ(back->size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const auto& a = in[i];
    const auto& b = (*back)[i];
    EXPECT_TRUE(a.tStart == b.tStart && a.tEnd == b.tEnd && a.src == b.src && a.dst == b.dst &&
                a.bytes == b.bytes && a.stage == b.stage && a.step == b.step && a.path == b.path &&
                a.unit == b.unit && a.piece == b.piece)
        << i;
  }
  auto none = decodeEvents(encodeEvents({}));
  ASSERT_TRUE(none.isOk());
  EXPECT_TRUE(none->empty());
}

TEST(RankRecords, BadEventRecordsAreRefused) {
  std::vector<traces::Event> in = {event(1), event(2)};
  const std::string bytes = encodeEvents(in);
  // Cut anywhere: refused.
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(decodeEvents(bytes.substr(0, n)).isOk()) << n;
  }
  // A count that the bytes do not hold is refused before anything is
  // allocated for it.
  std::string huge = bytes;
  const uint64_t count = uint64_t{1} << 60;
  for (int i = 0; i < 8; ++i) huge[kWireHeaderBytes + i] = static_cast<char>(count >> (8 * i));
  expectDataLoss(decodeEvents(huge).status(), "events announced");
  // A path no build knows (the last event's: path, unit and piece end the record).
  std::string path = bytes;
  path[path.size() - 12] = static_cast<char>(traces::kEventPathCount);
  expectDataLoss(decodeEvents(path).status(), "event path");
}

}  // namespace
}  // namespace tide::exec
