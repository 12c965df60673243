// The GPU layer on the device that exists: RAII buffers, the generator's
// fill and the XXH3 checksum against the host, FP8 block quantization
// against the CPU reference at 64x64 and 128x128, staging round trips per
// tensor and bucketed, CUDA IPC into a second process, and an NCCL
// broadcast over a world of one rank. Each case skips with "no CUDA device"
// where there is none (label gpu); the host-only parts (bucket bounds, the
// IPC handle's text, the no-device errors) run everywhere.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/core/kv_store.h"
#include "engine/gpu/cuda_shard_memory.h"
#include "engine/gpu/cuda_status.h"
#include "engine/gpu/device_buffer.h"
#include "engine/gpu/device_checksum.h"
#include "engine/gpu/device_fp8.h"
#include "engine/gpu/device_generator.h"
#include "engine/gpu/host_registration.h"
#include "engine/gpu/ipc.h"
#include "engine/gpu/pinned_buffer.h"
#include "engine/gpu/staging.h"
#include "engine/sync/fp8_quantizer.h"
#include "tests/engine/gpu/shard_memory_contract.h"
#include "workloads/model.h"
#include "workloads/routing.h"
#include "workloads/weights.h"

#ifdef TIDE_GPU_TEST_NCCL
#include "engine/transport/nccl/nccl_collective.h"
#endif

namespace tide::gpu {
namespace {

#define TIDE_NEED_GPU() \
  if (deviceCount() == 0) GTEST_SKIP() << kNoDevice

std::vector<uint8_t> randomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

std::vector<uint8_t> toHost(const void* dev, size_t n) {
  std::vector<uint8_t> v(n);
  EXPECT_EQ(cudaMemcpy(v.data(), dev, n, cudaMemcpyDeviceToHost), cudaSuccess);
  return v;
}

TEST(GpuIpc, HandleTextRoundTripsAndRejectsGarbage) {
  IpcHandle h;
  for (size_t i = 0; i < h.bytes.size(); ++i) h.bytes[i] = static_cast<uint8_t>(i * 37 + 1);
  h.size = 12345;
  const IpcHandle back = orThrow(IpcHandle::fromText(h.toText()));
  EXPECT_EQ(back.bytes, h.bytes);
  EXPECT_EQ(back.size, h.size);
  EXPECT_FALSE(IpcHandle::fromText("abc:1").isOk());
  EXPECT_FALSE(IpcHandle::fromText(std::string(128, 'g') + ":1").isOk());
  EXPECT_FALSE(IpcHandle::fromText(std::string(128, 'a') + ":0").isOk());
  EXPECT_FALSE(IpcHandle::fromText(std::string(128, 'a')).isOk());
}

TEST(GpuDevice, NoDeviceGivesTheReason) {
  if (deviceCount() > 0) GTEST_SKIP() << "a CUDA device exists";
  auto info = deviceInfo(0);
  ASSERT_FALSE(info.isOk());
  EXPECT_NE(info.status().message().find(kNoDevice), std::string::npos);
}

TEST(GpuDevice, BuffersAllocateCopyAndRegister) {
  TIDE_NEED_GPU();
  const DeviceInfo info = orThrow(deviceInfo(0));
  EXPECT_FALSE(info.name.empty());
  EXPECT_GT(info.driverVersion, 0);
  DeviceBuffer d = orThrow(DeviceBuffer::allocate(1 << 20));
  PinnedBuffer p = orThrow(PinnedBuffer::allocate(1 << 20));
  const auto want = randomBytes(1 << 20, 1);
  std::memcpy(p.data(), want.data(), want.size());
  ASSERT_EQ(cudaMemcpy(d.data(), p.data(), want.size(), cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(toHost(d.data(), want.size()), want);
  std::vector<uint8_t> plain(1 << 20);
  {
    HostRegistration r = orThrow(HostRegistration::create(plain.data(), plain.size()));
    ASSERT_EQ(cudaMemcpy(plain.data(), d.data(), plain.size(), cudaMemcpyDeviceToHost),
              cudaSuccess);
  }
  EXPECT_EQ(plain, want);
  DeviceBuffer moved = std::move(d);
  EXPECT_EQ(d.data(), nullptr);
  EXPECT_NE(moved.data(), nullptr);
  EXPECT_FALSE(DeviceBuffer::allocate(uint64_t{1} << 60).isOk());  // refused, not a crash
}

struct Model {
  workloads::ModelSpec spec = orThrow(workloads::loadModel("tiny-moe"));
  workloads::ModelInventory inv = workloads::buildInventory(spec);
  static constexpr int kSteps = 4;
  workloads::SyntheticWeights w{inv, workloads::generateRouting(spec, {}, kSteps),
                                workloads::RlConfig{}, kSteps};
};

TEST(GpuGenerator, FillAndChecksumMatchTheHost) {
  TIDE_NEED_GPU();
  Model m;
  Stream s = orThrow(Stream::create());
  DeviceGenerator g = orThrow(DeviceGenerator::create(m.w));
  int checked = 0;
  for (uint32_t t = 0; t < m.inv.tensors.size(); t += 5) {
    const auto& shape = m.inv.tensors[t].shape;
    workloads::Box box = workloads::Box::full(shape);
    box.lo.back() = shape.back() / 3;
    for (int v : {0, 1, Model::kSteps}) {
      std::vector<uint16_t> want(box.volume());
      ASSERT_TRUE(m.w.fillBox(t, box, v, want).isOk());
      DeviceBuffer d = orThrow(DeviceBuffer::allocate(2 * want.size()));
      ASSERT_TRUE(g.fillBox(t, box, v, static_cast<uint16_t*>(d.data()), s).isOk());
      const auto got = toHost(d.data(), d.size());
      ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size()), 0)
          << m.inv.tensors[t].name << " v" << v;
      EXPECT_EQ(orThrow(deviceXxh3(d.data(), d.size(), s)), orThrow(m.w.boxChecksum(t, box, v)));
      ++checked;
    }
  }
  EXPECT_GT(checked, 10);
}

TEST(GpuChecksum, EqualsXxh3AtEveryLengthClass) {
  TIDE_NEED_GPU();
  Stream s = orThrow(Stream::create());
  const auto data = randomBytes((8 << 20) + 3, 9);
  DeviceBuffer d = orThrow(DeviceBuffer::allocate(data.size()));
  ASSERT_EQ(cudaMemcpy(d.data(), data.data(), data.size(), cudaMemcpyHostToDevice), cudaSuccess);
  for (uint64_t len : {0ul, 1ul, 16ul, 240ul, 241ul, 1024ul, 1025ul, 4099ul, 1048576ul,
                       static_cast<unsigned long>(data.size() - 1)}) {
    EXPECT_EQ(orThrow(deviceXxh3(d.bytes() + 1, len, s)), XXH3_64bits(data.data() + 1, len)) << len;
  }
}

TEST(GpuFp8, KernelMatchesTheCpuReferenceAt64And128) {
  TIDE_NEED_GPU();
  Stream s = orThrow(Stream::create());
  std::mt19937_64 rng(11);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  for (int block : {64, 128}) {
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1000, 700}, {128, 128}, {1, 4097}}) {
      std::vector<uint16_t> src(rows * cols);
      for (auto& x : src) x = sync::floatToBf16(normal(rng));
      src[3] = 0x7fc0;               // NaN: not in amax, stays NaN
      src[src.size() / 2] = 0xff80;  // -inf: scale 1
      src[src.size() - 1] = sync::floatToBf16(3e4f);
      sync::Fp8BlockShape bs{rows, cols, block};
      std::vector<uint8_t> want(src.size());
      std::vector<float> wantScales(bs.numScales());
      ASSERT_TRUE(sync::quantizeBf16ToE4m3(src, bs, want, wantScales).isOk());
      DeviceBuffer dsrc = orThrow(DeviceBuffer::allocate(2 * src.size()));
      DeviceBuffer ddst = orThrow(DeviceBuffer::allocate(src.size()));
      DeviceBuffer dsc = orThrow(DeviceBuffer::allocate(4 * wantScales.size()));
      ASSERT_EQ(cudaMemcpy(dsrc.data(), src.data(), dsrc.size(), cudaMemcpyHostToDevice),
                cudaSuccess);
      ASSERT_TRUE(quantizeE4m3OnDevice(static_cast<uint16_t*>(dsrc.data()), rows, cols, block,
                                       ddst.bytes(), static_cast<float*>(dsc.data()), s)
                      .isOk());
      ASSERT_TRUE(s.synchronize().isOk());
      EXPECT_EQ(toHost(ddst.data(), ddst.size()), want) << rows << "x" << cols << "/" << block;
      const auto sc = toHost(dsc.data(), dsc.size());
      EXPECT_EQ(std::memcmp(sc.data(), wantScales.data(), sc.size()), 0);
    }
  }
  EXPECT_FALSE(quantizeE4m3OnDevice(nullptr, 4, 4, 0, nullptr, nullptr, s).isOk());
}

TEST(GpuStaging, PerTensorAndBucketedRoundTrips) {
  TIDE_NEED_GPU();
  std::vector<StagedTensor> tensors;
  uint64_t off = 0;
  for (int i = 0; i < 40; ++i) {
    const uint64_t n = 4096u << (i % 8);
    tensors.push_back({off, off, n});
    off += n + (i % 3 == 0 ? 512 : 0);  // some gaps: not every pair merges
  }
  const auto want = randomBytes(off, 5);
  DeviceBuffer d = orThrow(DeviceBuffer::allocate(off));
  ASSERT_EQ(cudaMemcpy(d.data(), want.data(), off, cudaMemcpyHostToDevice), cudaSuccess);
  PinnedBuffer a = orThrow(PinnedBuffer::allocate(off)), b = orThrow(PinnedBuffer::allocate(off));
  std::memset(a.data(), 0, off);
  std::memset(b.data(), 0, off);
  Stream s0 = orThrow(Stream::create());
  ASSERT_TRUE(copyPerTensor(CopyDirection::kDeviceToHost, d.bytes(), a.data(), tensors, s0).isOk());
  std::vector<Stream> streams;
  for (int i = 0; i < 3; ++i) streams.push_back(orThrow(Stream::create()));
  BucketedCopy c = orThrow(BucketedCopy::start(CopyDirection::kDeviceToHost, d.bytes(), b.data(),
                                               tensors, 1 << 20, streams));
  EXPECT_GT(c.buckets(), 1u);
  ASSERT_TRUE(c.waitAll().isOk());
  for (const auto& t : tensors) {
    ASSERT_EQ(std::memcmp(a.data() + t.hostOffset, want.data() + t.deviceOffset, t.bytes), 0);
    ASSERT_EQ(std::memcmp(b.data() + t.hostOffset, want.data() + t.deviceOffset, t.bytes), 0);
  }
  // H2D back into a cleared device buffer, bucketed.
  ASSERT_EQ(cudaMemset(d.data(), 0, off), cudaSuccess);
  BucketedCopy up = orThrow(BucketedCopy::start(CopyDirection::kHostToDevice, d.bytes(), b.data(),
                                                tensors, 1 << 20, streams));
  ASSERT_TRUE(up.waitBucket(0).isOk());
  ASSERT_TRUE(up.waitAll().isOk());
  EXPECT_FALSE(up.waitBucket(up.buckets()).isOk());
  const auto back = toHost(d.data(), off);
  for (const auto& t : tensors) {
    ASSERT_EQ(std::memcmp(back.data() + t.deviceOffset, want.data() + t.deviceOffset, t.bytes), 0);
  }
}

// The importer is another process (gpu_ipc_peer): it opens the handle and
// prints the XXH3 of what it reads there.
TEST(GpuIpc, AnotherProcessReadsTheExportedBuffer) {
  TIDE_NEED_GPU();
  const auto want = randomBytes(3 << 20, 21);
  DeviceBuffer d = orThrow(DeviceBuffer::allocate(want.size()));
  ASSERT_EQ(cudaMemcpy(d.data(), want.data(), want.size(), cudaMemcpyHostToDevice), cudaSuccess);
  const IpcHandle h = orThrow(exportIpc(d));
  // The build's peer, or TIDE_GPU_IPC_PEER where the binaries were moved (scripts/gpu-check.sh).
  const char* peer = std::getenv("TIDE_GPU_IPC_PEER");
  const std::string cmd = std::string(peer ? peer : TIDE_GPU_IPC_PEER) + " " + h.toText();
  FILE* f = popen(cmd.c_str(), "r");
  ASSERT_NE(f, nullptr);
  char line[256] = {};
  const bool got = std::fgets(line, sizeof line, f) != nullptr;
  const int rc = pclose(f);
  ASSERT_TRUE(got);
  ASSERT_EQ(rc, 0) << line;
  EXPECT_EQ(std::stoull(line), XXH3_64bits(want.data(), want.size())) << line;
}

// The CUDA shard memory held to the contract the host one meets
// (shard_memory_contract.h): the executor's device-memory path on a GPU.
TEST(GpuShardMemory, NoDeviceGivesTheReason) {
  if (deviceCount() > 0) GTEST_SKIP() << "a CUDA device exists";
  ContractModel model;
  auto m = makeCudaShardMemory(model.w, 0);
  ASSERT_FALSE(m.isOk());
  EXPECT_EQ(m.status().code(), Code::kUnavailable);
  EXPECT_EQ(m.status().message(), kNoDevice);
}

TEST(GpuShardMemory, MeetsTheShardMemoryContract) {
  TIDE_NEED_GPU();
  ContractModel model;
  auto m = orThrow(makeCudaShardMemory(model.w, 0));
  EXPECT_STREQ(m->kind(), "cuda");
  EXPECT_EQ(makeCudaShardMemory(model.w, deviceCount()).status().code(), Code::kInvalidArgument);
  checkFill(*m, model);
  checkStaging(*m);
  checkStagingJob(*m);
  checkChecksums(*m);
  checkRefusals(*m, model);
}

#ifdef TIDE_GPU_TEST_NCCL
TEST(GpuCollective, BroadcastOverAWorldOfOneRank) {
  TIDE_NEED_GPU();
  MemoryStore store;
  transport::TransportConfig c;
  c.backend = "nccl";
  c.store = &store;
  auto coll = orThrow(transport::nccl::createNcclCollective(c));
  EXPECT_EQ(coll->worldSize(), 1);
  const auto want = randomBytes(1 << 20, 4);
  DeviceBuffer d = orThrow(DeviceBuffer::allocate(want.size()));
  ASSERT_EQ(cudaMemcpy(d.data(), want.data(), want.size(), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_TRUE(coll->broadcast(d.data(), d.size(), 0).isOk());
  EXPECT_EQ(toHost(d.data(), d.size()), want);
  EXPECT_FALSE(coll->broadcast(d.data(), d.size(), 1).isOk());
}

TEST(GpuCollective, BroadcastBetweenTwoGpus) {
  TIDE_NEED_GPU();
  if (deviceCount() < 2) GTEST_SKIP() << "needs 2 CUDA devices (NCCL ranks cannot share one GPU)";
  MemoryStore store;
  const auto want = randomBytes(4 << 20, 8);
  std::vector<std::vector<uint8_t>> got(2);
  std::vector<Status> st(2);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      st[r] = [&]() -> Status {
        transport::TransportConfig c;
        c.store = &store;
        c.rank = r;
        c.worldSize = 2;
        TIDE_ASSIGN_OR_RETURN(auto coll, transport::nccl::createNcclCollective(c));
        TIDE_ASSIGN_OR_RETURN(DeviceBuffer d, DeviceBuffer::allocate(want.size()));
        TIDE_RETURN_IF_ERROR(cudaCheck(cudaMemset(d.data(), 0, d.size()), "clear"));
        if (r == 0) {
          TIDE_RETURN_IF_ERROR(cudaCheck(
              cudaMemcpy(d.data(), want.data(), want.size(), cudaMemcpyHostToDevice), "copy in"));
        }
        TIDE_RETURN_IF_ERROR(coll->broadcast(d.data(), d.size(), 0));
        got[r].resize(want.size());
        return cudaCheck(cudaMemcpy(got[r].data(), d.data(), want.size(), cudaMemcpyDeviceToHost),
                         "copy out");
      }();
    });
  }
  for (auto& t : ranks) t.join();
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(st[r].isOk()) << st[r].toString();
    EXPECT_EQ(got[r], want) << "rank " << r;
  }
}

TEST(GpuCollective, NoDeviceGivesTheReason) {
  if (deviceCount() > 0) GTEST_SKIP() << "a CUDA device exists";
  MemoryStore store;
  transport::TransportConfig c;
  c.store = &store;
  auto coll = transport::nccl::createNcclCollective(c);
  ASSERT_FALSE(coll.isOk());
  EXPECT_NE(coll.status().message().find(kNoDevice), std::string::npos);
}
#endif

}  // namespace
}  // namespace tide::gpu
