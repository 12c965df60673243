#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "engine/core/clock.h"
#include "engine/core/kv_store.h"
#include "engine/sync/disk_delta_reader.h"
#include "engine/sync/disk_delta_writer.h"

namespace tide::sync {
namespace {

namespace fs = std::filesystem;

// A rank's bf16 tensors evolving by small Adam-like steps on FP32 masters, so
// the changed fraction comes from bf16 rounding. Deterministic per seed.
class Model {
 public:
  Model(std::vector<size_t> elements, uint32_t seed) : rng_(seed) {
    std::normal_distribution<float> w(0.f, 0.02f);
    for (size_t n : elements) {
      std::vector<float> m(n);
      for (auto& x : m) x = w(rng_);
      master_.push_back(std::move(m));
    }
  }
  void step() {
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    for (auto& t : master_)
      for (auto& x : t) x -= 1e-6f * (u(rng_) > 0 ? 1.f : -1.f);
  }
  std::vector<std::vector<uint8_t>> bf16() const {
    std::vector<std::vector<uint8_t>> out;
    for (const auto& t : master_) {
      std::vector<uint8_t> b(2 * t.size());
      for (size_t i = 0; i < t.size(); ++i) {
        uint32_t u;
        std::memcpy(&u, &t[i], 4);
        uint16_t h = static_cast<uint16_t>((u + 0x7fff + ((u >> 16) & 1)) >> 16);
        std::memcpy(&b[2 * i], &h, 2);
      }
      out.push_back(std::move(b));
    }
    return out;
  }
  DiskDeltaSlice slice() const {
    DiskDeltaSlice s;
    for (const auto& t : master_) {
      s.tensorBytes.push_back(2 * t.size());
      s.elemBytes.push_back(2);
    }
    return s;
  }

 private:
  std::mt19937 rng_;
  std::vector<std::vector<float>> master_;
};

std::vector<std::span<const uint8_t>> views(const std::vector<std::vector<uint8_t>>& v) {
  return {v.begin(), v.end()};
}
std::vector<std::span<uint8_t>> mutableViews(std::vector<std::vector<uint8_t>>& v) {
  return {v.begin(), v.end()};
}
std::vector<std::vector<uint8_t>> zeros(const DiskDeltaSlice& s) {
  std::vector<std::vector<uint8_t>> out;
  for (auto b : s.tensorBytes) out.emplace_back(b, 0);
  return out;
}

class DiskDeltaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tide-disk-delta-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    opt_.dir = tmpl;
    opt_.baseEvery = 3;
    opt_.io.blockBytes = 64 << 10;  // several blocks per file
  }
  void TearDown() override { fs::remove_all(opt_.dir); }

  // Two ranks with different tensor sets (rank 0's last tensor is tiny).
  void init() {
    models_ = {Model({100000, 3000, 7}, 1), Model({50001, 200}, 2)};
    for (uint32_t r = 0; r < 2; ++r) writers_.emplace_back(opt_, r, models_[r].slice());
  }
  // Every rank writes version v (after one model step when v > 0); commits
  // unless told not to. Keeps each version's tensors for checks.
  void writeVersion(uint64_t v, bool commit = true) {
    if (v > 0)
      for (auto& m : models_) m.step();
    lastRecords_.clear();
    for (uint32_t r = 0; r < 2; ++r) {
      auto t = models_[r].bf16();
      auto st = writers_[r].writeStep(v, views(t));
      ASSERT_TRUE(st.isOk()) << st.status().toString();
      EXPECT_EQ(st->record.kind, v % opt_.baseEvery ? DiskDeltaKind::kDelta : DiskDeltaKind::kBase);
      if (v % opt_.baseEvery) {
        EXPECT_LT(st->record.bytes * 3, st->sliceBytes) << "a delta should be much smaller";
        EXPECT_GT(st->changedFraction(), 0.0);
      }
      lastRecords_.push_back(st->record);
      lastBase_ = st->baseVersion;
      history_[r].push_back(std::move(t));
    }
    if (commit) {
      ASSERT_TRUE(commitVersion(opt_, v, lastBase_, lastRecords_).isOk());
    }
  }
  void writeVersions(uint64_t last) {
    for (uint64_t v = 0; v <= last; ++v) writeVersion(v);
  }
  std::string file(uint64_t v, uint32_t r, DiskDeltaKind k) {
    return opt_.dir + "/" + rankFileName(v, r, k);
  }

  std::vector<DiskDeltaFile> lastRecords_;
  uint64_t lastBase_ = 0;
  DiskDeltaOptions opt_;
  std::vector<Model> models_;
  std::vector<DiskDeltaWriter> writers_;
  std::vector<std::vector<std::vector<uint8_t>>> history_[2];
};

TEST_F(DiskDeltaTest, ReaderFollowsEveryStepBitExact) {
  init();
  writeVersion(0);
  DiskDeltaReader reader(opt_, 1, models_[1].slice());
  auto t = zeros(models_[1].slice());
  std::optional<uint64_t> cur;
  ASSERT_TRUE(reader.update(mutableViews(t), cur, 0).isOk());
  EXPECT_EQ(t, history_[1][0]);
  for (uint64_t v = 1; v <= 7; ++v) {
    writeVersion(v, /*commit=*/false);
    // Files are durable but the manifest is not there: still v - 1.
    EXPECT_EQ(*reader.latest(), v - 1);
    ASSERT_TRUE(commitVersion(opt_, v, lastBase_, lastRecords_).isOk());
    ASSERT_EQ(*reader.latest(), v);
    auto st = reader.update(mutableViews(t), cur, v);
    ASSERT_TRUE(st.isOk()) << st.toString();
    EXPECT_EQ(cur, v);
    EXPECT_EQ(t, history_[1][v]) << "version " << v;
  }
  EXPECT_EQ(reader.stats().deltasApplied, 5u);  // 1, 2, 4, 5, 7
  EXPECT_EQ(reader.stats().basesLoaded, 3u);    // 0, 3, 6
}

TEST_F(DiskDeltaTest, NewReaderRebuildsAnyVersionFromBaseAndChain) {
  init();
  writeVersions(8);
  for (uint64_t v : {8u, 7u, 5u, 2u, 0u}) {
    DiskDeltaReader reader(opt_, 0, models_[0].slice());
    auto t = zeros(models_[0].slice());
    std::optional<uint64_t> cur;
    auto st = reader.update(mutableViews(t), cur, v);
    ASSERT_TRUE(st.isOk()) << st.toString();
    EXPECT_EQ(t, history_[0][v]) << "version " << v;
    EXPECT_EQ(reader.stats().basesLoaded, 1u);
    EXPECT_EQ(reader.stats().deltasApplied, v % 3);
  }
  // A reader far behind skips to the newest base on its way.
  DiskDeltaReader reader(opt_, 1, models_[1].slice());
  auto t = history_[1][1];
  std::optional<uint64_t> cur = 1;
  ASSERT_TRUE(reader.update(mutableViews(t), cur, 7).isOk());
  EXPECT_EQ(t, history_[1][7]);
  EXPECT_EQ(reader.stats().basesLoaded, 1u);
  EXPECT_EQ(reader.stats().deltasApplied, 1u);
}

// Shared check: the update to `to` fails with kDataLoss within bounded time
// and leaves the targets on `held`, bit-exact.
void expectStaysOn(DiskDeltaReader& reader, std::vector<std::vector<uint8_t>>& t,
                   std::optional<uint64_t>& cur, uint64_t to,
                   const std::vector<std::vector<uint8_t>>& held, uint64_t heldVersion) {
  Stopwatch sw;
  auto st = reader.update(mutableViews(t), cur, to);
  EXPECT_LT(sw.seconds(), 5.0);
  ASSERT_FALSE(st.isOk());
  EXPECT_EQ(st.code(), Code::kDataLoss) << st.toString();
  EXPECT_EQ(cur, heldVersion);
  EXPECT_TRUE(t == held) << "targets must stay on the complete version " << heldVersion;
}

TEST_F(DiskDeltaTest, TruncatedDeltaStopsOnLastCompleteVersionAndRetryCompletes) {
  init();
  writeVersions(4);
  DiskDeltaReader reader(opt_, 0, models_[0].slice());
  auto t = zeros(models_[0].slice());
  std::optional<uint64_t> cur;
  ASSERT_TRUE(reader.update(mutableViews(t), cur, 3).isOk());
  std::string f = file(4, 0, DiskDeltaKind::kDelta);
  ASSERT_EQ(::truncate(f.c_str(), static_cast<off_t>(fs::file_size(f) / 2)), 0);
  expectStaysOn(reader, t, cur, 4, history_[0][3], 3);

  // Retry: a restarted rank-0 writer, seeded from version 3, rewrites 4.
  DiskDeltaWriter again(opt_, 0, models_[0].slice());
  ASSERT_TRUE(again.seed(3, 3, views(history_[0][3])).isOk());
  auto st = again.writeStep(4, views(history_[0][4]));
  ASSERT_TRUE(st.isOk());
  auto m = reader.manifest(4);
  ASSERT_TRUE(m.isOk());
  std::vector<DiskDeltaFile> recs = {st->record, *m->file(1)};
  ASSERT_TRUE(commitVersion(opt_, 4, 3, recs).isOk());
  ASSERT_TRUE(reader.update(mutableViews(t), cur, 4).isOk());
  EXPECT_EQ(t, history_[0][4]);
}

TEST_F(DiskDeltaTest, CorruptedDeltaOrBaseIsRejectedBeforeTouchingTargets) {
  init();
  writeVersions(2);
  DiskDeltaReader reader(opt_, 1, models_[1].slice());
  auto t = history_[1][1];
  std::optional<uint64_t> cur = 1;
  std::string f = file(2, 1, DiskDeltaKind::kDelta);
  {
    std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(static_cast<std::streamoff>(fs::file_size(f) / 2));
    char c = 0x5a;
    io.write(&c, 1);
  }
  expectStaysOn(reader, t, cur, 2, history_[1][1], 1);

  // A corrupt base: a new reader gets a clear error and holds no version.
  std::string b = file(0, 1, DiskDeltaKind::kBase);
  {
    std::fstream io(b, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(10);
    char c = 0x33;
    io.write(&c, 1);
  }
  DiskDeltaReader fresh(opt_, 1, models_[1].slice());
  auto z = zeros(models_[1].slice());
  std::optional<uint64_t> none;
  auto st = fresh.update(mutableViews(z), none, 1);
  EXPECT_EQ(st.code(), Code::kDataLoss) << st.toString();
  EXPECT_FALSE(none.has_value());
  EXPECT_TRUE(z == zeros(models_[1].slice()));
}

TEST_F(DiskDeltaTest, DamagedManifestHidesItsVersion) {
  init();
  writeVersions(2);
  DiskDeltaReader reader(opt_, 0, models_[0].slice());
  std::string m = opt_.dir + "/" + manifestName(2);
  ASSERT_EQ(::truncate(m.c_str(), static_cast<off_t>(fs::file_size(m) - 5)), 0);
  EXPECT_EQ(*reader.latest(), 1u);
  auto t = zeros(models_[0].slice());
  std::optional<uint64_t> cur;
  EXPECT_EQ(reader.update(mutableViews(t), cur, 2).code(), Code::kDataLoss);
  ASSERT_TRUE(reader.update(mutableViews(t), cur, 1).isOk());
  EXPECT_EQ(t, history_[0][1]);
}

// The child writes versions 0..2 committed, then version 3 through a 250 kB/s
// cap, and is killed with SIGKILL while writing it.
TEST_F(DiskDeltaTest, WriterKilledMidStepLeavesLastCommittedVersion) {
  init();
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    TokenBucket slow(250e3, 64 << 10);
    for (uint64_t v = 0; v <= 3; ++v) {
      if (v > 0)
        for (auto& m : models_) m.step();
      if (v == 3) {
        opt_.io.cap = &slow;
        opt_.baseEvery = 1;  // a full base: ~200 KB, over half a second at 250 kB/s
        writers_[0] = DiskDeltaWriter(opt_, 0, models_[0].slice());
      }
      std::vector<DiskDeltaFile> recs;
      uint64_t base = 0;
      for (uint32_t r = 0; r < 2; ++r) {
        auto t = models_[r].bf16();
        auto st = writers_[r].writeStep(v, views(t));
        if (!st.isOk()) ::_exit(2);
        recs.push_back(st->record);
        base = st->baseVersion;
      }
      if (!commitVersion(opt_, v, base, recs).isOk()) ::_exit(3);
    }
    ::_exit(0);
  }
  // Wait for version 2, then kill the writer inside version 3.
  std::string m2 = opt_.dir + "/" + manifestName(2);
  auto deadline = Deadline::after(30);
  while (!fs::exists(m2) && !deadline.expired())
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_TRUE(fs::exists(m2));
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the writer finished before it was killed";

  for (uint64_t v = 0; v <= 3; ++v) {
    if (v > 0)
      for (auto& m : models_) m.step();
    for (uint32_t r = 0; r < 2; ++r) history_[r].push_back(models_[r].bf16());
  }
  EXPECT_FALSE(fs::exists(opt_.dir + "/" + manifestName(3)));
  for (uint32_t r = 0; r < 2; ++r) {
    DiskDeltaReader reader(opt_, r, models_[r].slice());
    ASSERT_EQ(*reader.latest(), 2u);
    auto t = zeros(models_[r].slice());
    std::optional<uint64_t> cur;
    ASSERT_TRUE(reader.update(mutableViews(t), cur, 2).isOk());
    EXPECT_EQ(t, history_[r][2]);
    // Retry from the rebuilt version: new writers, seeded, rewrite 3.
    DiskDeltaWriter w(opt_, r, models_[r].slice());
    ASSERT_TRUE(w.seed(2, 0, views(t)).isOk());
    auto st = w.writeStep(3, views(history_[r][3]));
    ASSERT_TRUE(st.isOk()) << st.status().toString();
    lastRecords_.push_back(st->record);
    lastBase_ = st->baseVersion;
  }
  ASSERT_TRUE(commitVersion(opt_, 3, lastBase_, lastRecords_).isOk());
  DiskDeltaReader reader(opt_, 0, models_[0].slice());
  auto t = zeros(models_[0].slice());
  std::optional<uint64_t> cur;
  ASSERT_TRUE(reader.update(mutableViews(t), cur, 3).isOk());
  EXPECT_EQ(t, history_[0][3]);
}

TEST_F(DiskDeltaTest, CommitThroughStoreTimesOutWhenARankIsMissing) {
  init();
  MemoryStore store;
  auto t0 = models_[0].bf16();
  auto s0 = writers_[0].writeStep(0, views(t0));
  ASSERT_TRUE(s0.isOk());
  Stopwatch sw;
  auto st = publishAndCommit(store, opt_, 2, 0, *s0, 0.3);
  EXPECT_EQ(st.code(), Code::kTimeout) << st.toString();
  EXPECT_LT(sw.seconds(), 3.0);
  EXPECT_FALSE(fs::exists(opt_.dir + "/" + manifestName(0)));
  auto t1 = models_[1].bf16();
  auto s1 = writers_[1].writeStep(0, views(t1));
  ASSERT_TRUE(s1.isOk());
  ASSERT_TRUE(publishAndCommit(store, opt_, 2, 0, *s1, 1.0).isOk());  // rank 1 only publishes
  ASSERT_TRUE(publishAndCommit(store, opt_, 2, 0, *s0, 1.0).isOk());
  DiskDeltaReader reader(opt_, 1, models_[1].slice());
  EXPECT_EQ(*reader.latest(), 0u);
}

TEST_F(DiskDeltaTest, WriterRefusesADeltaItCannotEncode) {
  init();
  auto t = models_[0].bf16();
  auto st = writers_[0].writeStep(1, views(t));
  EXPECT_EQ(st.status().code(), Code::kFailedPrecondition) << st.status().toString();
  t.pop_back();
  EXPECT_EQ(writers_[0].writeStep(0, views(t)).status().code(), Code::kInvalidArgument);
}

TEST_F(DiskDeltaTest, PruneKeepsTheNewestBaseChain) {
  init();
  writeVersions(7);
  auto removed = pruneBefore(opt_, 7);
  ASSERT_TRUE(removed.isOk());
  EXPECT_EQ(*removed, 6u * 3u);  // versions 0..5: a manifest and two rank files each
  DiskDeltaReader reader(opt_, 0, models_[0].slice());
  auto t = zeros(models_[0].slice());
  std::optional<uint64_t> cur;
  EXPECT_EQ(reader.update(mutableViews(t), cur, 4).code(), Code::kNotFound);
  ASSERT_TRUE(reader.update(mutableViews(t), cur, 7).isOk());
  EXPECT_EQ(t, history_[0][7]);
}

TEST(DiskDeltaIo, TokenBucketCapsWriteBandwidth) {
  char tmpl[] = "/tmp/tide-disk-delta-io-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  std::string path = std::string(tmpl) + "/f";
  std::vector<uint8_t> data(4 << 20, 7);
  TokenBucket cap(20e6, 1 << 20);  // 20 MB/s, 1 MB burst: >= 0.15 s for 4 MiB
  FileIoOptions io;
  io.blockBytes = 256 << 10;
  io.cap = &cap;
  Stopwatch sw;
  ASSERT_TRUE(writeFileDurable(path, data, io).isOk());
  double capped = sw.seconds();
  EXPECT_GE(capped, 0.15);
  EXPECT_LT(capped, 5.0);
  io.cap = nullptr;
  auto back = readWholeFile(path, io);
  ASSERT_TRUE(back.isOk());
  EXPECT_EQ(*back, data);
  io.useUring = false;
  back = readWholeFile(path, io);
  ASSERT_TRUE(back.isOk());
  EXPECT_EQ(*back, data);
  EXPECT_EQ(readWholeFile(std::string(tmpl) + "/missing", io).status().code(), Code::kNotFound);
  fs::remove_all(tmpl);
}

TEST(DiskDeltaManifestFormat, RoundTripsAndRejectsEdits) {
  DiskDeltaManifest m;
  m.version = 12;
  m.baseVersion = 8;
  m.ranks = 2;
  m.files = {{0, DiskDeltaKind::kDelta, 100, 0xabc, 0xdef}, {1, DiskDeltaKind::kDelta, 7, 1, 2}};
  auto text = m.serialize();
  auto back = DiskDeltaManifest::parse(text);
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_EQ(back->version, 12u);
  EXPECT_EQ(back->files[1].bytes, 7u);
  auto edited = text;
  edited[edited.find("100")] = '9';
  EXPECT_EQ(DiskDeltaManifest::parse(edited).status().code(), Code::kDataLoss);
  EXPECT_FALSE(DiskDeltaManifest::parse(text.substr(0, text.size() / 2)).isOk());
  EXPECT_EQ(manifestVersion(manifestName(42)), 42u);
  EXPECT_FALSE(manifestVersion("v0000000042.r00000.delta").has_value());
}

}  // namespace
}  // namespace tide::sync
