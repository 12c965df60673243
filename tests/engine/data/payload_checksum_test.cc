#include "engine/data/payload_checksum.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <cstring>

#include "engine/data/batch_store.h"
#include "tests/engine/data/pair_fixture.h"

namespace tide::data {
namespace {

std::vector<uint8_t> pattern(uint64_t n) {
  std::vector<uint8_t> v(n);
  for (uint64_t i = 0; i < n; ++i) v[i] = uint8_t((i * 0x9E3779B97F4A7C15ull) >> 56);
  return v;
}

TEST(PayloadChecksum, SameOnAnyThreadCountAndSensitiveToEveryPiece) {
  auto v = pattern(3 * kChecksumChunk + 12345);
  uint64_t one = payloadChecksum(v.data(), v.size(), 1);
  EXPECT_EQ(one, payloadChecksum(v.data(), v.size(), 3));
  EXPECT_EQ(one, payloadChecksum(v.data(), v.size(), 8));
  for (uint64_t at : {uint64_t(0), kChecksumChunk + 7, 3 * kChecksumChunk + 12344}) {
    v[at] ^= 1;
    EXPECT_NE(one, payloadChecksum(v.data(), v.size(), 2)) << "byte " << at;
    v[at] ^= 1;
  }
  // Pieces are ordered: swapping two equal-length pieces changes the sum.
  std::vector<uint8_t> w(v.begin(), v.begin() + 2 * kChecksumChunk);
  uint64_t ab = payloadChecksum(w.data(), w.size());
  std::swap_ranges(w.begin(), w.begin() + kChecksumChunk, w.begin() + kChecksumChunk);
  EXPECT_NE(ab, payloadChecksum(w.data(), w.size()));
  EXPECT_EQ(payloadChecksum(nullptr, 0), combinePieceHashes({}));
}

// Pieces may be hashed by an AVX2 build of xxh3: every length class of the
// algorithm (0, 1-3, 4-8, 9-16, 17-128, 129-240, long, long with a partial
// stripe) must give the library's value.
TEST(PayloadChecksum, PieceHashIsTheLibrarysXxh3) {
  auto v = pattern(3 << 20);
  for (uint64_t n :
       {0, 1, 3, 4, 8, 9, 16, 17, 128, 129, 240, 241, 1024, 1037, 65536 + 63, (3 << 20) - 5}) {
    for (uint64_t offset : {0, 1}) {
      uint64_t got = 0;
      HashJob job{v.data() + offset, n - (n > 0 ? offset : 0), &got};
      hashJobs({&job, 1}, 1);
      EXPECT_EQ(got, XXH3_64bits(job.data, job.length)) << n << " bytes at +" << offset;
    }
  }
  std::cout << "piece hash: " << hashImplementation() << "\n";
}

class MultiPieceTest : public ::testing::TestWithParam<std::string> {};

// A field spanning several pieces is read one request per piece and each
// piece is verified against the writer's sum; corruption in any piece fails.
TEST_P(MultiPieceTest, EveryPieceOfALargeFieldIsVerified) {
  MemoryStore kv;
  PoolConfig pc;
  pc.classes = {{4096, 8}, {(5 * kChecksumChunk) / 2 + 4096, 2}};
  pc.waitTimeoutSeconds = 2;
  auto ranks = testing::makeRanks(GetParam(), kv, 2, pc);
  if (ranks.empty()) GTEST_SKIP() << "backend " << GetParam() << " not compiled";
  ranks[0].store->setChecksums(ChecksumPolicy::kOn);  // shm's default is off
  const uint64_t n = (5 * kChecksumChunk) / 2;        // 2.5 pieces
  auto lease = std::make_shared<Lease>(orThrow(ranks[0].pool->acquire(n)));
  auto v = pattern(n);
  std::memcpy(lease->data(), v.data(), n);
  Batch b;
  orThrow(b.add("blob", orThrow(Column::dense(DType::kU8, {int64_t(n)},
                                              BufferRef{lease, lease->data(), n}))));
  ASSERT_TRUE(ranks[0].store->put("big", b).isOk());
  Manifest m = orThrow(ranks[1].store->manifest("big"));
  EXPECT_EQ(m.fields[0].data.checksum, payloadChecksum(v.data(), n, 1));
  {
    Batch got = orThrow(ranks[1].store->get("big"));
    auto p = orThrow(got.column("blob"))->payload();
    ASSERT_EQ(p.size(), n);
    EXPECT_EQ(0, std::memcmp(p.data(), v.data(), n));
  }
  for (uint64_t at : {uint64_t(3), kChecksumChunk + 1, 2 * kChecksumChunk + 9}) {
    lease->data()[at] ^= 0x40;
    auto r = ranks[1].store->get("big");
    EXPECT_EQ(r.status().code(), Code::kDataLoss) << "byte " << at;
    lease->data()[at] ^= 0x40;
    EXPECT_EQ(ranks[1].pool->stats().leasesOut, 0u);
  }
  EXPECT_TRUE(ranks[1].store->get("big").isOk());
}

INSTANTIATE_TEST_SUITE_P(Backends, MultiPieceTest, ::testing::Values("shm", "tcp"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace tide::data
