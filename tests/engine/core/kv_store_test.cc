#include "engine/core/kv_store.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace tide {
namespace {

TEST(MemoryStore, GetWaitsForSet) {
  MemoryStore store;
  std::thread t([&] { ASSERT_TRUE(store.set("addr/1", "x").isOk()); });
  auto v = store.get("addr/1", 5.0);
  t.join();
  ASSERT_TRUE(v.isOk());
  EXPECT_EQ(*v, "x");
}

TEST(MemoryStore, GetTimesOut) {
  MemoryStore store;
  auto v = store.get("missing", 0.05);
  ASSERT_FALSE(v.isOk());
  EXPECT_EQ(v.status().code(), Code::kTimeout);
}

TEST(MemoryStore, BarrierReleasesAllRanks) {
  MemoryStore store;
  PrefixStore scoped(store, "run7/");
  std::vector<std::thread> ranks;
  std::atomic<int> ok{0};
  for (int i = 0; i < 4; ++i)
    ranks.emplace_back([&] { ok += storeBarrier(scoped, "b0", 4, 5.0).isOk(); });
  for (auto& t : ranks) t.join();
  EXPECT_EQ(ok.load(), 4);
  EXPECT_EQ(*store.get("run7/b0/count", 0), "4");
}

TEST(MemoryStore, BarrierTimesOutWithCount) {
  MemoryStore store;
  Status s = storeBarrier(store, "b1", 2, 0.05);
  EXPECT_EQ(s.code(), Code::kTimeout);
  EXPECT_NE(s.message().find("1/2 arrived"), std::string::npos);
}

}  // namespace
}  // namespace tide
