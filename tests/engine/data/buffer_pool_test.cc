#include "engine/data/buffer_pool.h"

#include <gtest/gtest.h>

#include <thread>

#include "engine/core/clock.h"

namespace tide::data {
namespace {

std::unique_ptr<BufferPool> pool(ExhaustedPolicy policy, uint32_t count = 2) {
  PoolConfig c;
  c.classes = {{1 << 20, count}, {4096, 4}};
  c.policy = policy;
  c.waitTimeoutSeconds = 0.2;
  return orThrow(BufferPool::create(nullptr, c));
}

TEST(BufferPool, PicksSmallestFittingClassAndReturnsOnRelease) {
  auto p = pool(ExhaustedPolicy::kFail);
  {
    Lease a = orThrow(p->acquire(100));
    EXPECT_EQ(a.size(), 4096u);
    Lease b = orThrow(p->acquire(5000));
    EXPECT_EQ(b.size(), 1u << 20);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 64, 0u);
    EXPECT_EQ(p->stats().leasesOut, 2u);
    Lease moved = std::move(b);
    EXPECT_FALSE(b.valid());
    EXPECT_EQ(p->stats().leasesOut, 2u);
  }
  EXPECT_EQ(p->stats().leasesOut, 0u);
  EXPECT_EQ(p->acquire(2 << 20).status().code(), Code::kInvalidArgument);
}

TEST(BufferPool, FailPolicyReportsExhaustion) {
  auto p = pool(ExhaustedPolicy::kFail);
  Lease a = orThrow(p->acquire(1 << 20)), b = orThrow(p->acquire(1 << 20));
  auto c = p->acquire(1 << 20);
  ASSERT_FALSE(c.isOk());
  EXPECT_EQ(c.status().code(), Code::kResourceExhausted);
  EXPECT_NE(c.status().message().find("exhausted"), std::string::npos);
  EXPECT_EQ(p->stats().failures, 1u);
}

TEST(BufferPool, WaitPolicyTimesOutThenSucceedsAfterRelease) {
  auto p = pool(ExhaustedPolicy::kWait, 1);
  Lease a = orThrow(p->acquire(1 << 20));
  Stopwatch sw;
  auto t = p->acquire(1 << 20);
  EXPECT_EQ(t.status().code(), Code::kTimeout);
  EXPECT_GE(sw.seconds(), 0.19);
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    a.release();
  });
  auto ok = p->acquire(1 << 20, ExhaustedPolicy::kWait, 5);
  releaser.join();
  EXPECT_TRUE(ok.isOk());
  EXPECT_EQ(p->stats().waits, 2u);
}

TEST(BufferPool, LocateNeedsRegisteredMemory) {
  auto p = pool(ExhaustedPolicy::kFail);
  Lease a = orThrow(p->acquire(10));
  EXPECT_EQ(p->locate(a.data(), 10).status().code(), Code::kFailedPrecondition);
  int x = 0;
  EXPECT_EQ(p->locate(&x, 4).status().code(), Code::kNotFound);
}

}  // namespace
}  // namespace tide::data
