#include "engine/data/manifest.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>

namespace tide::data {
namespace {

Manifest sampleManifest() {
  Manifest m;
  m.id = "step3/p0";
  m.rows = 4;
  m.metaJson = R"({"weight_version":3})";
  m.regions.push_back(transport::RemoteRegion{1, 7, 1 << 20, 0, 42, {}});
  FieldManifest t;
  t.name = "tokens";
  t.kind = ColumnKind::kRagged;
  t.dtype = DType::kI32;
  t.valueCount = 10;
  t.data = {0, 0, 40, 1};
  t.offsets = {0, 64, 40, 2};
  FieldManifest r;
  r.name = "reward";
  r.dtype = DType::kF32;
  r.dims = {4};
  r.data = {0, 128, 16, 3};
  m.fields = {t, r};
  return m;
}

TEST(Manifest, RoundTrips) {
  Manifest m = sampleManifest();
  ASSERT_TRUE(m.validate().isOk()) << m.validate().toString();
  auto d = orThrow(Manifest::decode(m.encode()));
  EXPECT_EQ(d.id, m.id);
  EXPECT_EQ(d.rows, 4);
  ASSERT_EQ(d.fields.size(), 2u);
  EXPECT_EQ(d.fields[0].offsets.offset, 64u);
  EXPECT_EQ(d.fields[1].dims, std::vector<int64_t>{4});
  EXPECT_EQ(d.regions[0], m.regions[0]);
  EXPECT_EQ(d.payloadBytes(), 96u);
  EXPECT_TRUE(d.payloadChecksums);
}

TEST(Manifest, PayloadChecksumFlag) {
  Manifest m = sampleManifest();
  m.payloadChecksums = false;
  EXPECT_EQ(m.validate().code(), Code::kInvalidArgument);  // segments still hashed
  for (auto& f : m.fields) f.data.checksum = f.offsets.checksum = 0;
  auto d = orThrow(Manifest::decode(m.encode()));
  EXPECT_FALSE(d.payloadChecksums);
  // An unknown flag bit is refused (the manifest's own hash recomputed).
  std::string bytes = m.encode();
  bytes[6] = 2;
  uint64_t sum = checksum(bytes.data(), bytes.size() - 8);
  std::memcpy(bytes.data() + bytes.size() - 8, &sum, 8);
  auto r = Manifest::decode(bytes);
  EXPECT_NE(r.status().message().find("unknown flags"), std::string::npos) << r.status().toString();
}

TEST(Manifest, EveryTruncationAndBitFlipIsRejected) {
  std::string e = sampleManifest().encode();
  for (size_t n = 0; n < e.size(); ++n) {
    auto r = Manifest::decode(e.substr(0, n));
    ASSERT_FALSE(r.isOk()) << n;
    EXPECT_EQ(r.status().code(), Code::kDataLoss);
  }
  for (size_t i = 0; i < e.size(); ++i) {
    std::string f = e;
    f[i] ^= 0x10;
    EXPECT_FALSE(Manifest::decode(f).isOk()) << i;
  }
}

Status check(void (*mutate)(Manifest&)) {
  Manifest m = sampleManifest();
  mutate(m);
  // Through the wire too: an encoder that skipped validation is caught on decode.
  auto d = Manifest::decode(m.encode());
  return d.isOk() ? Status::ok() : d.status();
}

TEST(Manifest, RejectsInconsistentDescriptions) {
  auto msg = [](void (*f)(Manifest&)) { return check(f).message(); };
  EXPECT_NE(msg([](Manifest& m) { m.fields[1].data.length = 12; }).find("need 16"),
            std::string::npos);  // dtype/shape mismatch
  EXPECT_NE(msg([](Manifest& m) { m.fields[1].dtype = DType::kF64; }).find("need 32"),
            std::string::npos);
  EXPECT_NE(msg([](Manifest& m) { m.fields[1].dims = {5}; }).find("leading dim"),
            std::string::npos);
  EXPECT_NE(msg([](Manifest& m) { m.fields[0].data.offset = 1 << 20; }).find("outside"),
            std::string::npos);  // payload shorter than declared
  EXPECT_NE(msg([](Manifest& m) { m.fields[0].data.offset = 8; }).find("aligned"),
            std::string::npos);
  EXPECT_NE(msg([](Manifest& m) { m.fields[0].offsets.length = 32; }).find("int64 expected"),
            std::string::npos);
  EXPECT_NE(msg([](Manifest& m) { m.fields[0].data.region = 3; }).find("region 3"),
            std::string::npos);
  EXPECT_NE(msg([](Manifest& m) { m.fields[1].name = "tokens"; }).find("duplicate"),
            std::string::npos);
  EXPECT_NE(msg([](Manifest& m) { m.metaJson = "{"; }).find("JSON"), std::string::npos);
  EXPECT_NE(msg([](Manifest& m) { m.fields[0].dims = {-1}; }).find("negative"), std::string::npos);
  EXPECT_NE(msg([](Manifest& m) {
              m.fields[1].dims = {4, 1ll << 40, 1ll << 40};
            }).find("overflow"),
            std::string::npos);
  EXPECT_NE(msg([](Manifest& m) { m.version = 9; }).find("schema version 9"), std::string::npos);
  // The largest row count: its offsets' size overflows, and so must not the
  // message that says so (found by fuzz_manifest).
  EXPECT_NE(msg([](Manifest& m) {
              m.rows = std::numeric_limits<int64_t>::max();
              m.fields.pop_back();
            }).find("9223372036854775808 int64 expected"),
            std::string::npos);
}

}  // namespace
}  // namespace tide::data
