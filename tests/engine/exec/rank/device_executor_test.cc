// The executor with its shards in shard memory (ExecOptions::shardMemory),
// ranks as threads: host memory standing in for the device, so the
// device-memory path (fill, D2H before the transfer, H2D after it,
// verification where the shard lives) runs without a GPU. Both strategies
// over tcp and shm are bit-exact; a missed staging copy or a corrupted
// replica is caught; the whole-shard digest equals shardDigest. Where a
// CUDA build has a device, the same run goes through CUDA memory.

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "engine/exec/executor/device_shards.h"
#include "engine/exec/executor/shard_content.h"
#include "engine/exec/executor/shard_digest.h"
#include "engine/exec/rank/sync_run.h"
#include "engine/gpu/host_shard_memory.h"
#include "tests/engine/exec/plan_fixture.h"
#include "tests/fakes/faulty_transport.h"
#ifdef TIDE_TEST_CUDA_SHARDS
#include "engine/gpu/cuda_shard_memory.h"
#include "engine/gpu/cuda_status.h"
#endif

namespace tide::exec {
namespace {

using gpu::CopyDirection;

// What a rank's shard memory was asked, in order: "fill", "d2h", "h2d", "sum".
struct OpLog {
  std::mutex mu;
  std::map<int, std::vector<std::string>> ops;
  void add(int rank, std::string op) {
    std::lock_guard<std::mutex> l(mu);
    ops[rank].push_back(std::move(op));
  }
};

// The host shard memory, logged; optionally dropping one direction's copies
// after set-up (a staging copy the executor forgot, as far as the data goes).
// Whether a rank wrote from its training replica while that replica's D2H
// had not landed in full: each rank's transport is a counting decorator
// (FaultyTransport without faults), asked at each look at an unfinished D2H.
struct SendWatch {
  std::mutex mu;
  std::map<int, const transport::fakes::FaultyTransport*> transports;
  std::atomic<int> earlyLooks{0};  // looks at an unfinished D2H after a write out of its replica
  uint64_t sentFrom(int rank, const uint8_t* replica) {
    std::lock_guard<std::mutex> l(mu);
    auto it = transports.find(rank);
    return it == transports.end() ? 0 : it->second->requestsFrom(replica);
  }
};

class WatchedJob final : public gpu::StagingJob {
 public:
  WatchedJob(std::unique_ptr<gpu::StagingJob> job, size_t tensors, SendWatch& watch, int rank,
             const uint8_t* replica)
      : job_(std::move(job)),
        tensors_(tensors),
        watch_(watch),
        rank_(rank),
        replica_(replica),
        before_(watch.sentFrom(rank, replica)) {}
  Result<size_t> landed() override {
    TIDE_ASSIGN_OR_RETURN(const size_t k, job_->landed());
    if (k < tensors_ && watch_.sentFrom(rank_, replica_) > before_) ++watch_.earlyLooks;
    return k;
  }
  Result<gpu::StageStats> finish() override { return job_->finish(); }

 private:
  std::unique_ptr<gpu::StagingJob> job_;
  size_t tensors_;
  SendWatch& watch_;
  int rank_;
  const uint8_t* replica_;
  uint64_t before_;  // the requests out of the replica when the D2H started
};

class LoggedMemory final : public gpu::ShardMemory {
 public:
  LoggedMemory(std::unique_ptr<gpu::ShardMemory> m, int rank, OpLog* log, bool dropD2h,
               bool dropStepH2d)
      : m_(std::move(m)), rank_(rank), log_(log), dropD2h_(dropD2h), dropStepH2d_(dropStepH2d) {}
  const char* kind() const override { return m_->kind(); }
  Result<std::unique_ptr<gpu::ShardBuffer>> allocate(uint64_t bytes) override {
    return m_->allocate(bytes);
  }
  Result<std::unique_ptr<gpu::HostPin>> pin(uint8_t* host, uint64_t bytes) override {
    return m_->pin(host, bytes);
  }
  Status fill(gpu::ShardBuffer& dst, uint64_t offset, uint32_t tensor, const workloads::Box& box,
              int version) override {
    if (log_) log_->add(rank_, "fill");
    return m_->fill(dst, offset, tensor, box, version);
  }
  Result<std::unique_ptr<gpu::StagingJob>> startStage(CopyDirection dir, gpu::ShardBuffer& shard,
                                                      uint8_t* host,
                                                      std::span<const gpu::StagedTensor> tensors,
                                                      const gpu::StagingOptions& o) override {
    const bool d2h = dir == CopyDirection::kDeviceToHost;
    if (log_) log_->add(rank_, d2h ? "d2h" : "h2d");
    const bool drop = d2h ? dropD2h_ : (dropStepH2d_ && h2ds_++ > 0);  // the first: the start
    if (drop) return gpu::finishedStagingJob({}, tensors.size());
    TIDE_ASSIGN_OR_RETURN(auto job, m_->startStage(dir, shard, host, tensors, o));
    if (!d2h || !watch_) return job;
    return std::unique_ptr<gpu::StagingJob>(
        new WatchedJob(std::move(job), tensors.size(), *watch_, rank_, host));
  }
  SendWatch* watch_ = nullptr;
  Result<uint64_t> checksum(const gpu::ShardBuffer& src,
                            std::span<const gpu::ShardRange> ranges) override {
    if (log_) log_->add(rank_, "sum");
    return m_->checksum(src, ranges);
  }

 private:
  std::unique_ptr<gpu::ShardMemory> m_;
  int rank_;
  OpLog* log_;
  bool dropD2h_, dropStepH2d_;
  int h2ds_ = 0;
};

struct DeviceRun {
  std::string backend = "shm";
  SendWatch* watch = nullptr;
  uint64_t bucketBytes = 64 * 1024;  // 0: per tensor
  int steps = 2;
  OpLog* log = nullptr;
  bool dropD2h = false, dropStepH2d = false;
  std::shared_ptr<const ExecHooks> hooks = poisonedTargets();
};

Result<std::vector<StepStats>> runDevice(const PlanFixture& s, const DeviceRun& run) {
  workloads::SyntheticWeights w(s.inv, {}, workloads::RlConfig{}, run.steps);
  transport::TransportConfig c;
  c.backend = run.backend;
  c.streams = 1;
  RankRunOptions o;
  o.steps = run.steps;
  o.exec.hooks = run.hooks;
  o.exec.timeoutSeconds = 60;
  o.exec.staging.bucketBytes = run.bucketBytes;
  o.exec.shardMemory = [run](const workloads::SyntheticWeights& weights,
                             int rank) -> Result<std::unique_ptr<gpu::ShardMemory>> {
    auto m = std::make_unique<LoggedMemory>(gpu::makeHostShardMemory(weights), rank, run.log,
                                            run.dropD2h, run.dropStepH2d);
    m->watch_ = run.watch;
    return std::unique_ptr<gpu::ShardMemory>(std::move(m));
  };
  if (run.watch) {
    o.wrapTransport = [watch = run.watch](std::unique_ptr<transport::Transport> t, int rank) {
      auto f = std::make_unique<transport::fakes::FaultyTransport>(std::move(t),
                                                                   transport::fakes::FaultPlan{});
      std::lock_guard<std::mutex> l(watch->mu);
      watch->transports[rank] = f.get();
      return std::unique_ptr<transport::Transport>(std::move(f));
    };
  }
  return runThreads(s.plan, w, c, o, nullptr);
}

uint64_t inferBytes(const PlanFixture& s) {
  uint64_t n = 0;
  for (const auto& h : s.plan.holdings) {
    if (h.space == plan::Space::kInfer) n += s.plan.regionBytes(h.tensor, h.box, h.dtype);
  }
  return n;
}

using Param = std::tuple<std::string, std::string, uint64_t>;  // backend, strategy, bucket
class DeviceExecutor : public ::testing::TestWithParam<Param> {};

TEST_P(DeviceExecutor, TwoUpdatesBitExactThroughStaging) {
  const auto& [backend, strategy, bucket] = GetParam();
  PlanFixture s(strategy.c_str(), 64 * 1024);
  OpLog log;
  DeviceRun run;
  run.backend = backend;
  run.bucketBytes = bucket;
  run.log = &log;
  auto stats = orThrow(runDevice(s, run));
  ASSERT_EQ(stats.size(), 2u);
  uint64_t crossRank = 0;
  for (auto b : s.plan.summarize().sentBytes) crossRank += b;
  for (const auto& st : stats) {
    EXPECT_EQ(st.bytes, crossRank);
    EXPECT_EQ(st.verifiedBytes, inferBytes(s));
    // Both staging copies timed, inside the step's window.
    EXPECT_GT(st.stageOutSeconds, 0);
    EXPECT_GT(st.stageInSeconds, 0);
    EXPECT_LE(st.stageOutSeconds, st.seconds);
    EXPECT_LE(st.stageInSeconds, st.seconds);
  }
  // Per rank and step: trainers fill, then D2H; inference ranks H2D, then
  // checksum every block. The start version is one H2D at set-up.
  const auto layouts = orThrow(RankLayout::buildAll(s.plan));
  for (size_t r = 0; r < s.plan.ranks.size(); ++r) {
    const auto& L = layouts[r];
    std::vector<std::string> want;
    const bool infer = L.spaceBytes(plan::Space::kInfer) > 0;
    const bool train = L.spaceBytes(plan::Space::kTrain) > 0;
    if (infer) want.push_back("h2d");
    for (int step = 1; step <= 2; ++step) {
      if (train) want.insert(want.end(), L.placed(plan::Space::kTrain).size(), "fill");
      if (train) want.push_back("d2h");
      if (infer) want.push_back("h2d");
      if (infer) want.insert(want.end(), L.placed(plan::Space::kInfer).size(), "sum");
    }
    EXPECT_EQ(log.ops[static_cast<int>(r)], want) << "rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, DeviceExecutor,
                         ::testing::Values(Param{"tcp", "p2p", 64 * 1024}, Param{"shm", "p2p", 0},
                                           Param{"tcp", "broadcast", 0},
                                           Param{"shm", "broadcast", 64 * 1024}),
                         [](const ::testing::TestParamInfo<Param>& i) {
                           return std::get<0>(i.param) + "_" + std::get<1>(i.param) +
                                  (std::get<2>(i.param) ? "_bucketed" : "_per_tensor");
                         });

// FP8 inference shards: the conversion runs on the host between the
// staging copies; the device verifies the e4m3 bytes and scales.
TEST(DeviceExecutorFp8, P2pAndBroadcastBitExact) {
  for (const char* strategy : {"p2p", "broadcast"}) {
    PlanFixture s(strategy, 64 * 1024, workloads::DType::kFP8E4M3);
    DeviceRun run;
    auto stats = orThrow(runDevice(s, run));
    ASSERT_EQ(stats.size(), 2u);
    for (const auto& st : stats) EXPECT_EQ(st.verifiedBytes, inferBytes(s)) << strategy;
  }
}

// Bucketed, the D2H lands bucket by bucket while the transfer runs (the
// host shard memory lands one bucket each time it is looked at): broadcast
// trainers write their gathers out of the replica before the rest of it
// has landed, and only what has, since every update is still bit-exact
// from poisoned targets. (A p2p group carries every block its target needs
// from across the shard, so it waits for nearly the whole D2H: bit-exact,
// no overlap claimed.)
TEST(DeviceExecutorOverlap, TrainersSendLandedBucketsWhileTheRestCopies) {
  for (const char* strategy : {"p2p", "broadcast"}) {
    PlanFixture s(strategy, 64 * 1024);
    SendWatch watch;
    DeviceRun run;
    run.bucketBytes = 16 * 1024;
    run.watch = &watch;
    auto stats = orThrow(runDevice(s, run));
    ASSERT_EQ(stats.size(), 2u);
    for (const auto& st : stats) EXPECT_EQ(st.verifiedBytes, inferBytes(s)) << strategy;
    if (std::string(strategy) == "broadcast") {
      EXPECT_GT(watch.earlyLooks.load(), 0) << "no write out of a replica before its D2H landed";
    }
  }
}

// Without the D2H the replicas hold no version; without the H2D the device
// keeps the poison: verification on the device must fail either way.
TEST(DeviceExecutorVerify, AMissedStagingCopyIsCaught) {
  for (const char* strategy : {"p2p", "broadcast"}) {
    PlanFixture s(strategy, 64 * 1024);
    for (int which = 0; which < 2; ++which) {
      DeviceRun run;
      run.steps = 1;
      run.dropD2h = which == 0;
      run.dropStepH2d = which == 1;
      auto r = runDevice(s, run);
      ASSERT_FALSE(r.isOk()) << strategy << " " << which;
      EXPECT_EQ(r.status().code(), Code::kDataLoss) << r.status().toString();
      EXPECT_NE(r.status().message().find("in host memory"), std::string::npos)
          << r.status().message();
    }
  }
}

// A byte flipped in the host replica after the transfer reaches the device
// with the H2D and is caught there, the rank and block named.
TEST(DeviceExecutorVerify, ACorruptedReplicaIsCaughtOnTheDevice) {
  PlanFixture s("p2p", 64 * 1024);
  DeviceRun run;
  run.steps = 1;
  const int victim = static_cast<int>(s.plan.ranks.size()) - 1;
  run.hooks = corruptShardOf(victim);
  auto r = runDevice(s, run);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), Code::kDataLoss);
  EXPECT_NE(r.status().message().find("not bit-exact on rank " + std::to_string(victim)),
            std::string::npos)
      << r.status().message();
}

TEST(DeviceExecutorVerify, NoShardMemoryFailsEveryRankAtSetUp) {
  PlanFixture s("p2p", 64 * 1024);
  workloads::SyntheticWeights w(s.inv, {}, workloads::RlConfig{}, 1);
  transport::TransportConfig c;
  c.backend = "shm";
  RankRunOptions o;
  o.exec.timeoutSeconds = 60;
  o.exec.shardMemory = [](const workloads::SyntheticWeights&,
                          int) -> Result<std::unique_ptr<gpu::ShardMemory>> {
    return TIDE_ERROR(Code::kUnavailable, "no CUDA device");
  };
  auto r = runThreads(s.plan, w, c, o, nullptr);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("no CUDA device"), std::string::npos)
      << r.status().toString();
  // Device shards take full updates in place only.
  o.exec.shardMemory = [](const workloads::SyntheticWeights& weights, int) {
    return Result<std::unique_ptr<gpu::ShardMemory>>(gpu::makeHostShardMemory(weights));
  };
  o.exec.shadowSwitch = true;
  r = runThreads(s.plan, w, c, o, nullptr);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("device memory"), std::string::npos);
}

// The whole inference shard's digest where it lives equals shardDigest of
// the same bytes on the host and the generator's for that version.
TEST(DeviceShardsTest, DigestAndVerifyWhereTheShardLives) {
  PlanFixture s("p2p", 64 * 1024);
  workloads::SyntheticWeights w(s.inv, {}, workloads::RlConfig{}, 2);
  const auto layouts = orThrow(RankLayout::buildAll(s.plan));
  const int r = static_cast<int>(s.plan.ranks.size()) - 1;
  const RankLayout& L = layouts[r];
  const uint64_t n = L.spaceBytes(plan::Space::kInfer);
  ASSERT_GT(L.placed(plan::Space::kInfer).size(), 1u);
  std::vector<uint8_t> host(n);
  ASSERT_TRUE(fillInferShard(w, L, 2, false, host.data()).isOk());
  auto d =
      orThrow(DeviceShards::create(gpu::makeHostShardMemory(w), w, L, r, nullptr, host.data(), {}));
  orThrow(d->stageIn());
  EXPECT_EQ(orThrow(d->inferDigest()), shardDigest(L, host.data()));
  EXPECT_EQ(orThrow(d->inferDigest()), orThrow(expectedShardDigest(w, L, 2)));
  EXPECT_EQ(orThrow(d->verifyInfer(2)), n);
  host[n - 1] ^= 1;
  orThrow(d->stageIn());
  EXPECT_NE(orThrow(d->inferDigest()), orThrow(expectedShardDigest(w, L, 2)));
  auto bad = d->verifyInfer(2);
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("is not version 2 in host memory"), std::string::npos)
      << bad.status().message();
}

#ifdef TIDE_TEST_CUDA_SHARDS
// The same updates with the shards in CUDA memory (label gpu runs it on a
// device; skipped without one).
TEST(DeviceExecutorCuda, P2pAndBroadcastBitExactFromGpuToGpu) {
  if (gpu::deviceCount() == 0) GTEST_SKIP() << gpu::kNoDevice;
  for (const char* strategy : {"p2p", "broadcast"}) {
    for (uint64_t bucket : {uint64_t{0}, uint64_t{64 * 1024}}) {
      PlanFixture s(strategy, 64 * 1024);
      workloads::SyntheticWeights w(s.inv, {}, workloads::RlConfig{}, 2);
      transport::TransportConfig c;
      c.backend = "shm";
      RankRunOptions o;
      o.steps = 2;
      o.exec.hooks = poisonedTargets();
      o.exec.timeoutSeconds = 60;
      o.exec.staging.bucketBytes = bucket;
      o.exec.shardMemory = [](const workloads::SyntheticWeights& weights, int) {
        return gpu::makeCudaShardMemory(weights, 0);
      };
      auto stats = orThrow(runThreads(s.plan, w, c, o, nullptr));
      ASSERT_EQ(stats.size(), 2u);
      for (const auto& st : stats) EXPECT_EQ(st.verifiedBytes, inferBytes(s)) << strategy;
    }
  }
}
#endif

}  // namespace
}  // namespace tide::exec
