#include "engine/data/batch_store.h"

#include <gtest/gtest.h>

#include <cstring>

#include "tests/engine/data/pair_fixture.h"

namespace tide::data {
namespace {

using testing::makeRanks;
using testing::Rank;

Batch sample(int64_t rows) {
  std::vector<std::vector<int32_t>> tokens(rows);
  std::vector<std::vector<uint8_t>> text(rows);
  std::vector<float> reward(rows);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < (i * 37) % 11; ++j) tokens[i].push_back(int32_t(i * 100 + j));
    text[i].assign(size_t(i % 5), uint8_t('a' + i % 26));
    reward[i] = float(i) * 0.5f;
  }
  Batch b;
  orThrow(b.add("tokens", orThrow(Column::fromRows(tokens))));
  auto t = orThrow(Column::fromRows(text));
  orThrow(b.add("text", orThrow(Column::object(t.data(), t.offsetsRef()))));
  orThrow(b.add("reward", orThrow(Column::fromDense(reward, {rows}))));
  b.meta()["weight_version"] = 5;
  return b;
}

void expectSameRows(const Batch& got, const Batch& want, int64_t wantFirst) {
  for (const auto& [name, c] : got.columns()) {
    const Column& w = *orThrow(want.column(name));
    for (int64_t i = 0; i < got.rows(); ++i) {
      auto a = c.rowBytes(i), b = w.rowBytes(wantFirst + i);
      ASSERT_EQ(a.size(), b.size()) << name << " row " << i;
      EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size())) << name << " row " << i;
    }
  }
}

class BatchStoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ranks_ = makeRanks(GetParam(), kv_, 2);
    if (ranks_.empty()) GTEST_SKIP() << "backend " << GetParam() << " not compiled";
  }
  MemoryStore kv_;
  std::vector<Rank> ranks_;
};

TEST_P(BatchStoreTest, PutGetWholeBatchAsViewsIntoOneLease) {
  Batch b = sample(50);
  ASSERT_TRUE(ranks_[0].store->put("b1", b).isOk());
  EXPECT_GT(ranks_[0].store->stats().putBytesPacked, 0u);
  Batch got = orThrow(ranks_[1].store->get("b1"));
  EXPECT_EQ(got.rows(), 50);
  EXPECT_EQ(got.meta()["weight_version"], 5);
  expectSameRows(got, b, 0);
  // Every column is a view into one lease.
  auto* t = orThrow(got.column("tokens"));
  auto* r = orThrow(got.column("reward"));
  EXPECT_EQ(t->data().owner, r->data().owner);
  EXPECT_EQ(ranks_[1].pool->stats().leasesOut, 1u);
  got = Batch();
  EXPECT_EQ(ranks_[1].pool->stats().leasesOut, 0u);
}

TEST_P(BatchStoreTest, BatchBuiltInPoolMemoryIsPublishedWithoutCopy) {
  auto lease = std::make_shared<Lease>(orThrow(ranks_[0].pool->acquire(4096)));
  auto* vals = reinterpret_cast<int32_t*>(lease->data());
  auto* offs = reinterpret_cast<int64_t*>(lease->data() + 1024);
  for (int i = 0; i < 10; ++i) vals[i] = i * i;
  int64_t o[] = {0, 3, 3, 10};
  std::memcpy(offs, o, sizeof o);
  BufferRef whole{lease, lease->data(), lease->size()};
  Batch b;
  orThrow(b.add(
      "x", orThrow(Column::ragged(DType::kI32, {}, whole.sub(0, 40), whole.sub(1024, sizeof o)))));
  ASSERT_TRUE(ranks_[0].store->put("zc", b).isOk());
  EXPECT_EQ(ranks_[0].store->stats().putBytesPacked, 0u);
  EXPECT_EQ(ranks_[0].store->stats().putBytesZeroCopy, 40u + sizeof o);
  Batch got = orThrow(ranks_[1].store->get("zc"));
  EXPECT_EQ(orThrow(got.column("x"))->row<int32_t>(2)[6], 81);
}

TEST_P(BatchStoreTest, SelectsFieldsRowsAndRanges) {
  Batch b = sample(40);
  ASSERT_TRUE(ranks_[0].store->put("b", b).isOk());
  ReadSpec one;
  one.fields = {"tokens", "reward"};
  one.rows = {{10, 25}};
  Batch got = orThrow(ranks_[1].store->get("b", one));
  EXPECT_EQ(got.rows(), 15);
  EXPECT_EQ(got.columns().size(), 2u);
  expectSameRows(got, b, 10);

  ReadSpec two;
  two.rows = {{0, 3}, {30, 40}};
  Batch g2 = orThrow(ranks_[1].store->get("b", two));
  EXPECT_EQ(g2.rows(), 13);
  expectSameRows(orThrow(g2.slice(0, 3)), b, 0);
  expectSameRows(orThrow(g2.slice(3, 13)), b, 30);

  ReadSpec empty;
  empty.rows = {{7, 7}};
  EXPECT_EQ(orThrow(ranks_[1].store->get("b", empty)).rows(), 0);
}

TEST_P(BatchStoreTest, AppendAddsAFieldWithoutRewriting) {
  Batch b = sample(20);
  ASSERT_TRUE(ranks_[0].store->put("b", b).isOk());
  auto before = orThrow(ranks_[1].store->manifest("b"));
  std::vector<std::vector<float>> lp(20);
  for (int i = 0; i < 20; ++i) lp[i].assign(size_t(i % 4), -0.25f * i);
  auto col = orThrow(Column::fromRows(lp));
  // The trainer rank computes old_log_prob and appends it from its own memory.
  ASSERT_TRUE(ranks_[1].store->append("b", "old_log_prob", col).isOk());
  auto after = orThrow(ranks_[0].store->manifest("b"));
  EXPECT_EQ(after.generation, before.generation + 1);
  EXPECT_EQ(after.fields[0].data.offset, before.fields[0].data.offset);
  ReadSpec s;
  s.fields = {"old_log_prob", "tokens"};
  Batch got = orThrow(ranks_[0].store->get("b", s));
  EXPECT_EQ(orThrow(got.column("old_log_prob"))->row<float>(7)[2], -1.75f);
  EXPECT_EQ(ranks_[1].store->append("b", "old_log_prob", col).code(), Code::kAlreadyExists);
  auto shortCol = orThrow(Column::fromDense<float>({1, 2}, {2}));
  EXPECT_EQ(ranks_[1].store->append("b", "x", shortCol).code(), Code::kInvalidArgument);
}

TEST_P(BatchStoreTest, TwoLevelLifetime) {
  ASSERT_TRUE(ranks_[0].store->put("b", sample(8), PutOptions{1}).isOk());
  EXPECT_EQ(orThrow(ranks_[0].store->reap()), 0);
  {
    Batch got = orThrow(ranks_[1].store->get("b"));
    ASSERT_TRUE(ranks_[1].store->done("b").isOk());
    EXPECT_EQ(orThrow(ranks_[0].store->reap()), 1);
    // The reader's lease is its own: still valid after the producer removed the object.
    EXPECT_EQ(orThrow(got.column("reward"))->values<float>()[3], 1.5f);
  }
  EXPECT_EQ(ranks_[0].store->holding(), 0u);
  EXPECT_EQ(ranks_[0].pool->stats().leasesOut, 0u);
  EXPECT_EQ(ranks_[1].pool->stats().leasesOut, 0u);
  auto gone = ranks_[1].store->get("b");
  EXPECT_EQ(gone.status().code(), Code::kNotFound);
  EXPECT_NE(gone.status().message().find("removed"), std::string::npos);
}

TEST_P(BatchStoreTest, BadReadsFailCleanlyAndLeaveTheStoreUnchanged) {
  Batch b = sample(16);
  ASSERT_TRUE(ranks_[0].store->put("b", b).isOk());
  std::string good = orThrow(kv_.get(manifestKey("b"), 1));
  auto& reader = *ranks_[1].store;

  ReadSpec unknown;
  unknown.fields = {"tokens", "nope"};
  auto r = reader.get("b", unknown);
  EXPECT_EQ(r.status().code(), Code::kNotFound);
  EXPECT_NE(r.status().message().find("no field 'nope'"), std::string::npos);

  ReadSpec dtype;
  dtype.expectDTypes = {{"tokens", DType::kI64}};
  EXPECT_NE(reader.get("b", dtype).status().message().find("is i32, expected i64"),
            std::string::npos);

  ReadSpec range;
  range.rows = {{10, 17}};
  EXPECT_EQ(reader.get("b", range).status().code(), Code::kOutOfRange);

  // Corrupt and truncated manifests.
  ASSERT_TRUE(kv_.set(manifestKey("c"), good.substr(0, good.size() / 2)).isOk());
  EXPECT_EQ(reader.get("c").status().code(), Code::kDataLoss);
  std::string flipped = good;
  flipped[flipped.size() / 2] ^= 1;
  ASSERT_TRUE(kv_.set(manifestKey("c"), flipped).isOk());
  EXPECT_EQ(reader.get("c").status().code(), Code::kDataLoss);

  // None of that touched the published batch, and no lease leaked.
  EXPECT_EQ(orThrow(kv_.get(manifestKey("b"), 1)), good);
  EXPECT_EQ(ranks_[1].pool->stats().leasesOut, 0u);
  expectSameRows(orThrow(reader.get("b")), b, 0);
}

TEST_P(BatchStoreTest, TamperedPayloadAndOffsetsAreDetected) {
  // Build in pool memory so the test can modify the published bytes.
  auto lease = std::make_shared<Lease>(orThrow(ranks_[0].pool->acquire(4096)));
  auto* vals = reinterpret_cast<int32_t*>(lease->data());
  auto* offs = reinterpret_cast<int64_t*>(lease->data() + 1024);
  int64_t o[] = {0, 3, 6, 10};
  std::memcpy(offs, o, sizeof o);
  for (int i = 0; i < 10; ++i) vals[i] = i;
  BufferRef whole{lease, lease->data(), lease->size()};
  Batch b;
  orThrow(b.add(
      "x", orThrow(Column::ragged(DType::kI32, {}, whole.sub(0, 40), whole.sub(1024, sizeof o)))));
  ranks_[0].store->setChecksums(ChecksumPolicy::kOn);  // shm's default is off
  ASSERT_TRUE(ranks_[0].store->put("t", b).isOk());
  vals[4] = 99;
  auto r = ranks_[1].store->get("t");
  EXPECT_EQ(r.status().code(), Code::kDataLoss);
  EXPECT_NE(r.status().message().find("checksum"), std::string::npos);
  offs[2] = 1;  // not monotonic any more
  ReadSpec noVerify;
  noVerify.verify = false;
  auto n = ranks_[1].store->get("t", noVerify);
  EXPECT_NE(n.status().message().find("not monotonic"), std::string::npos) << n.status().toString();
  ReadSpec ranged;
  ranged.rows = {{0, 3}};
  auto rr = ranks_[1].store->get("t", ranged);
  EXPECT_NE(rr.status().message().find("not monotonic"), std::string::npos);
  EXPECT_EQ(ranks_[1].pool->stats().leasesOut, 0u);
}

TEST_P(BatchStoreTest, ChecksumPolicyDecidesWhatTheManifestCarries) {
  // auto: hashed only where peers may be on other hosts (tcp), not on shm.
  ASSERT_TRUE(ranks_[0].store->put("auto", sample(8)).isOk());
  Manifest a = orThrow(ranks_[1].store->manifest("auto"));
  EXPECT_EQ(a.payloadChecksums, GetParam() == "tcp");
  for (const auto& f : a.fields) EXPECT_EQ(f.data.checksum != 0, a.payloadChecksums) << f.name;
  // off: nothing to verify, the batch still reads back; an append follows
  // the published manifest, not the appender's own policy.
  ranks_[0].store->setChecksums(ChecksumPolicy::kOff);
  Batch b = sample(8);
  ASSERT_TRUE(ranks_[0].store->put("off", b).isOk());
  ranks_[1].store->setChecksums(ChecksumPolicy::kOn);
  auto col = orThrow(Column::fromDense(std::vector<float>(8, 0.5f), {8}));
  ASSERT_TRUE(ranks_[1].store->append("off", "old_log_prob", col).isOk());
  Manifest m = orThrow(ranks_[1].store->manifest("off"));
  EXPECT_FALSE(m.payloadChecksums);
  for (const auto& f : m.fields) EXPECT_EQ(f.data.checksum, 0u) << f.name;
  ReadSpec original;
  original.fields = {"tokens", "text", "reward"};
  expectSameRows(orThrow(ranks_[1].store->get("off", original)), b, 0);
  Batch all = orThrow(ranks_[1].store->get("off"));
  EXPECT_EQ(orThrow(all.column("old_log_prob"))->payload().size(), 8 * sizeof(float));
  // on: every segment hashed, on either backend.
  ranks_[0].store->setChecksums(ChecksumPolicy::kOn);
  ASSERT_TRUE(ranks_[0].store->put("on", sample(8)).isOk());
  Manifest on = orThrow(ranks_[1].store->manifest("on"));
  EXPECT_TRUE(on.payloadChecksums);
  for (const auto& f : on.fields) EXPECT_NE(f.data.checksum, 0u) << f.name;
  EXPECT_EQ(parseChecksumPolicy("sometimes").status().code(), Code::kInvalidArgument);
}

TEST_P(BatchStoreTest, InvalidPutPublishesNothing) {
  EXPECT_EQ(ranks_[0].store->put("", sample(2)).code(), Code::kInvalidArgument);
  ASSERT_TRUE(ranks_[0].store->put("d", sample(2)).isOk());
  EXPECT_EQ(ranks_[0].store->put("d", sample(2)).code(), Code::kAlreadyExists);
  EXPECT_EQ(ranks_[1].store->manifest("never", 0.05).status().code(), Code::kTimeout);
}

INSTANTIATE_TEST_SUITE_P(Backends, BatchStoreTest, ::testing::Values("shm", "tcp"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace tide::data
