// nccl backend on the GPUs that exist: registration of device memory only,
// one-sided requests refused with the reason, an in-place broadcast that
// delivers the root's bytes, control messages through the store. Skips with
// "no CUDA device" where there is none (label gpu).

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "engine/core/kv_store.h"
#include "engine/gpu/device_buffer.h"
#include "engine/transport/nccl/nccl_handles.h"
#include "engine/transport/nccl/nccl_transport.h"

namespace tide::transport::nccl {
namespace {

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 131 + (i >> 9));
  return v;
}

TEST(Nccl, SingleRankApi) {
  if (gpu::deviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  MemoryStore store;
  TransportConfig c;
  c.backend = "nccl";
  c.store = &store;
  auto t = orThrow(createNcclTransport(c));
  EXPECT_FALSE(t->capabilities().oneSided);
  int host = 0;
  auto hostReg = t->registerRegion(&host, sizeof host, MemoryKind::kHost);
  ASSERT_FALSE(hostReg.isOk());
  EXPECT_NE(hostReg.status().message().find("CUDA"), std::string::npos);
  auto buf = orThrow(gpu::DeviceBuffer::allocate(1 << 20));
  auto region = orThrow(t->registerRegion(buf.data(), buf.size(), MemoryKind::kCuda));
  Request r;
  r.localRegion = region.id;
  r.length = 16;
  auto sub = t->submit(std::span(&r, 1));
  ASSERT_FALSE(sub.isOk());
  EXPECT_EQ(sub.status().code(), Code::kUnimplemented);
  EXPECT_NE(sub.status().message().find("two-sided"), std::string::npos);
  auto* nt = dynamic_cast<NcclTransport*>(t.get());
  ASSERT_NE(nt, nullptr);
  const auto want = pattern(buf.size(), 7);
  ASSERT_EQ(cudaMemcpy(buf.data(), want.data(), want.size(), cudaMemcpyHostToDevice), cudaSuccess);
  orThrow(nt->broadcast(region.id, 0, buf.size(), 0));
  std::vector<uint8_t> got(buf.size());
  ASSERT_EQ(cudaMemcpy(got.data(), buf.data(), got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(got, want);
  EXPECT_FALSE(nt->broadcast(region.id, buf.size() - 8, 16, 0).isOk());  // outside the region
  orThrow(t->deregisterRegion(region.id));
}

TEST(Nccl, BroadcastAcrossDevices) {
  const int n = gpu::deviceCount();
  if (n == 0) GTEST_SKIP() << "no CUDA device";
  if (n < 2) GTEST_SKIP() << "needs 2 CUDA devices (NCCL ranks cannot share one GPU)";
  const int world = std::min(n, 4);
  constexpr size_t kBytes = 8 << 20;
  constexpr size_t kOff = 4096, kLen = kBytes - 8192;
  MemoryStore store;
  std::vector<Status> status(world, Status::ok());
  std::vector<std::thread> th;
  for (int rank = 0; rank < world; ++rank) {
    th.emplace_back([&, rank] {
      auto run = [&]() -> Status {
        TransportConfig c;
        c.backend = "nccl";
        c.rank = rank;
        c.worldSize = world;
        c.store = &store;
        TIDE_ASSIGN_OR_RETURN(auto t, createNcclTransport(c));
        auto* nt = dynamic_cast<NcclTransport*>(t.get());
        TIDE_ASSIGN_OR_RETURN(auto buf, gpu::DeviceBuffer::allocate(kBytes));
        const auto mine = pattern(kBytes, static_cast<uint8_t>(rank * 17));
        TIDE_RETURN_IF_ERROR(gpu::cudaCheck(
            cudaMemcpy(buf.data(), mine.data(), kBytes, cudaMemcpyHostToDevice), "copy in"));
        TIDE_ASSIGN_OR_RETURN(auto region,
                              t->registerRegion(buf.data(), kBytes, MemoryKind::kCuda));
        TIDE_RETURN_IF_ERROR(nt->broadcast(region.id, kOff, kLen, 0));
        std::vector<uint8_t> got(kBytes);
        TIDE_RETURN_IF_ERROR(gpu::cudaCheck(
            cudaMemcpy(got.data(), buf.data(), kBytes, cudaMemcpyDeviceToHost), "copy out"));
        auto want = mine;
        const auto root = pattern(kBytes, 0);
        std::copy(root.begin() + kOff, root.begin() + kOff + kLen, want.begin() + kOff);
        if (got != want) return TIDE_ERROR(Code::kDataLoss, "broadcast bytes differ");
        // Control channel: every rank greets rank 0.
        if (rank != 0) {
          const uint8_t hello[3] = {1, 2, static_cast<uint8_t>(rank)};
          TIDE_RETURN_IF_ERROR(t->send(0, 5, hello));
        } else {
          for (int p = 1; p < world; ++p) {
            TIDE_ASSIGN_OR_RETURN(auto m, t->recv(p, 5, 30));
            if (m.size() != 3 || m[2] != p) return TIDE_ERROR(Code::kDataLoss, "bad control msg");
          }
        }
        return Status::ok();
      };
      status[rank] = run();
    });
  }
  for (auto& t : th) t.join();
  for (int r = 0; r < world; ++r)
    EXPECT_TRUE(status[r].isOk()) << r << ": " << status[r].toString();
}

TEST(Nccl, NoDeviceSaysSo) {
  if (gpu::deviceCount() > 0) GTEST_SKIP() << "a CUDA device exists";
  MemoryStore store;
  TransportConfig c;
  c.backend = "nccl";
  c.store = &store;
  auto t = createNcclTransport(c);
  ASSERT_FALSE(t.isOk());
  EXPECT_NE(t.status().message().find("no CUDA device"), std::string::npos);
}

}  // namespace
}  // namespace tide::transport::nccl
