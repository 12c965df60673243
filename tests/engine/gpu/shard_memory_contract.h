#pragma once
// What every ShardMemory implementation must do (shard_memory.h), as one
// set of checks the host implementation runs everywhere and the CUDA one
// runs on a device: fill = the host generator's bits, staging round trips
// per tensor and bucketed with the same copy counts, a bucketed pass whose
// tensors are usable as they land, checksums of scattered
// ranges = XXH3 of their concatenation, ranges outside a shard refused.

#include <gtest/gtest.h>
#include <xxhash.h>

#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "engine/gpu/shard_memory.h"
#include "workloads/model.h"
#include "workloads/weights.h"

namespace tide::gpu {

struct ContractModel {
  workloads::ModelSpec spec = orThrow(workloads::loadModel("tiny-moe"));
  workloads::ModelInventory inv = workloads::buildInventory(spec);
  workloads::SyntheticWeights w{inv, {}, workloads::RlConfig{}, 3};
};

inline std::vector<uint8_t> contractBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

// Two adjacent on both sides, an empty one, a gap, a large one, a short tail
// (in a shard of 1 MiB); bucketed at 100000 bytes: {0..3} {4} {5}.
inline std::vector<StagedTensor> contractTensors() {
  return {{0, 0, 1000},         {1000, 1000, 3000},       {4000, 4000, 0},
          {8192, 5000, 200000}, {208192, 205000, 500000}, {900000, 800000, 17}};
}

inline void checkFill(ShardMemory& m, const ContractModel& model) {
  int checked = 0;
  for (uint32_t t = 0; t < model.inv.tensors.size(); t += 7) {
    workloads::Box box = workloads::Box::full(model.inv.tensors[t].shape);
    box.lo.back() = box.hi.back() / 4;
    for (int v : {0, 2}) {
      std::vector<uint16_t> want(box.volume());
      ASSERT_TRUE(model.w.fillBox(t, box, v, want).isOk());
      const uint64_t bytes = want.size() * 2, at = 6;
      auto shard = orThrow(m.allocate(at + bytes + 10));
      ASSERT_TRUE(m.fill(*shard, at, t, box, v).isOk());
      std::vector<uint8_t> host(bytes);
      const StagedTensor one{at, 0, bytes};
      orThrow(m.stage(CopyDirection::kDeviceToHost, *shard, host.data(), {&one, 1}, {}));
      ASSERT_EQ(std::memcmp(host.data(), want.data(), bytes), 0) << t << " v" << v;
      const ShardRange r{at, bytes};
      EXPECT_EQ(orThrow(m.checksum(*shard, {&r, 1})), orThrow(model.w.boxChecksum(t, box, v)));
      ++checked;
    }
  }
  EXPECT_GT(checked, 4);
}

inline void checkStaging(ShardMemory& m) {
  const uint64_t n = 1 << 20;
  const auto src = contractBytes(n, 5);
  const std::vector<StagedTensor> t = contractTensors();
  auto shard = orThrow(m.allocate(n));
  StagingOptions bucketed;
  bucketed.bucketBytes = 100000;
  bucketed.streams = 3;
  const StageStats in = orThrow(
      m.stage(CopyDirection::kHostToDevice, *shard, const_cast<uint8_t*>(src.data()), t, bucketed));
  EXPECT_EQ(in.bytes, 704017u);
  EXPECT_EQ(in.buckets, 3u);  // {0..3} reaches 204000 at the 4th; {4}; {5}
  EXPECT_EQ(in.copies, 4u);   // 0+1 merged, 3, 4, 5 (3 and 4 adjacent, other buckets)
  std::vector<uint8_t> back(n, 0);
  const StageStats out = orThrow(m.stage(CopyDirection::kDeviceToHost, *shard, back.data(), t, {}));
  EXPECT_EQ(out.copies, 5u);  // one per non-empty tensor
  EXPECT_EQ(out.buckets, t.size());
  for (const StagedTensor& x : t) {
    EXPECT_EQ(std::memcmp(back.data() + x.hostOffset, src.data() + x.hostOffset, x.bytes), 0)
        << x.deviceOffset;
  }
  EXPECT_EQ(back[4500], 0);  // in no tensor: untouched
}

// A bucketed D2H under way: what it reports landed is in the host buffer,
// only bucket ends are reported, the count only grows and reaches every
// tensor; finish() gives the pass's stats. Per tensor, the job starts
// finished. A job dropped while it copies is waited for.
inline void checkStagingJob(ShardMemory& m) {
  const uint64_t n = 1 << 20;
  const auto src = contractBytes(n, 6);
  const std::vector<StagedTensor> t = contractTensors();
  auto shard = orThrow(m.allocate(n));
  const StagedTensor all{0, 0, n};
  orThrow(m.stage(CopyDirection::kHostToDevice, *shard, const_cast<uint8_t*>(src.data()), {&all, 1},
                  {}));
  StagingOptions bucketed;
  bucketed.bucketBytes = 100000;
  bucketed.streams = 2;
  std::vector<uint8_t> back(n, 0);
  auto job = orThrow(m.startStage(CopyDirection::kDeviceToHost, *shard, back.data(), t, bucketed));
  size_t seen = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (seen < t.size()) {
    const size_t k = orThrow(job->landed());
    ASSERT_GE(k, seen);
    ASSERT_TRUE(k == 0 || k == 4 || k == 5 || k == 6) << k;  // bucket ends: {0..3} {4} {5}
    for (size_t i = 0; i < k; ++i) {
      ASSERT_EQ(
          std::memcmp(back.data() + t[i].hostOffset, src.data() + t[i].deviceOffset, t[i].bytes), 0)
          << "tensor " << i << " reported landed at " << k;
    }
    seen = k;
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "stuck at " << seen;
    if (seen < t.size()) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  const StageStats st = orThrow(job->finish());
  EXPECT_EQ(st.bytes, 704017u);
  EXPECT_EQ(st.buckets, 3u);
  EXPECT_EQ(st.copies, 4u);
  EXPECT_EQ(orThrow(job->landed()), t.size());

  std::vector<uint8_t> once(n, 0);
  auto per = orThrow(m.startStage(CopyDirection::kDeviceToHost, *shard, once.data(), t, {}));
  EXPECT_EQ(orThrow(per->landed()), t.size());  // waited for at the start
  EXPECT_EQ(std::memcmp(once.data() + 205000, src.data() + 208192, 500000), 0);
  EXPECT_EQ(orThrow(per->finish()).buckets, t.size());

  {
    auto big = orThrow(m.allocate(64 << 20));
    std::vector<uint8_t> host(64 << 20);
    const StagedTensor whole{0, 0, 64 << 20};
    StagingOptions one;
    one.bucketBytes = 1 << 20;
    auto dropped =
        orThrow(m.startStage(CopyDirection::kDeviceToHost, *big, host.data(), {&whole, 1}, one));
    dropped.reset();  // before `big` and `host` go: must not copy into freed memory
  }
}

inline void checkChecksums(ShardMemory& m) {
  const uint64_t n = (3 << 20) + 5;
  auto src = contractBytes(n, 8);
  auto shard = orThrow(m.allocate(n));
  const StagedTensor all{0, 0, n};
  orThrow(m.stage(CopyDirection::kHostToDevice, *shard, src.data(), {&all, 1}, {}));
  const std::vector<ShardRange> r = {
      {7, 100}, {107, 5000}, {9000, 3}, {20000, 2 << 20}, {n - 1, 1}};
  std::vector<uint8_t> cat;
  for (const auto& x : r)
    cat.insert(cat.end(), src.begin() + x.offset, src.begin() + x.offset + x.bytes);
  EXPECT_EQ(orThrow(m.checksum(*shard, r)), XXH3_64bits(cat.data(), cat.size()));
  EXPECT_EQ(orThrow(m.checksum(*shard, {&r[3], 1})), XXH3_64bits(src.data() + 20000, 2 << 20));
  EXPECT_EQ(orThrow(m.checksum(*shard, {})), XXH3_64bits(nullptr, 0));
}

inline void checkRefusals(ShardMemory& m, const ContractModel& model) {
  auto shard = orThrow(m.allocate(4096));
  std::vector<uint8_t> host(8192);
  const StagedTensor past{4000, 0, 97};
  auto s = m.stage(CopyDirection::kDeviceToHost, *shard, host.data(), {&past, 1}, {});
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.status().code(), Code::kOutOfRange);
  const ShardRange wrap{1, ~0ull};
  EXPECT_EQ(m.checksum(*shard, {&wrap, 1}).status().code(), Code::kOutOfRange);
  const workloads::Box whole = workloads::Box::full(model.inv.tensors[0].shape);
  ASSERT_GT(whole.volume() * 2, 4096u);
  EXPECT_EQ(m.fill(*shard, 0, 0, whole, 0).code(), Code::kOutOfRange);
}

}  // namespace tide::gpu
