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

// A counter's text may come from any process that can write the store: one
// that is not a number (or would overflow) is an error, never an exception.
TEST(MemoryStore, AddOnTextThatIsNotACounterFails) {
  MemoryStore s;
  for (const char* bad : {"abc", "", "12x", " 3", "99999999999999999999"}) {
    ASSERT_TRUE(s.set("c", bad).isOk());
    auto r = s.add("c", 1);
    ASSERT_FALSE(r.isOk()) << "'" << bad << "'";
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    EXPECT_NE(r.status().message().find("'c'"), std::string::npos) << r.status().message();
    EXPECT_EQ(*s.get("c", 0), bad);
  }
  ASSERT_TRUE(s.set("c", "9223372036854775807").isOk());
  EXPECT_EQ(s.add("c", 1).status().code(), Code::kInvalidArgument);
  ASSERT_TRUE(s.set("c", "-5").isOk());
  EXPECT_EQ(*s.add("c", 7), 2);
  EXPECT_EQ(*s.add("fresh", -3), -3);
}

TEST(AddToCounter, ParsesAndAddsOrRefuses) {
  const std::string ten = "10", junk = "10 ";
  EXPECT_EQ(*addToCounter(nullptr, 4), 4);
  EXPECT_EQ(*addToCounter(&ten, -11), -1);
  EXPECT_FALSE(addToCounter(&junk, 1).isOk());
  const std::string min = "-9223372036854775808";
  EXPECT_FALSE(addToCounter(&min, -1).isOk());
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

// Rank 0 leaves once the others have; alone, it gives up after the timeout.
TEST(MemoryStore, DepartWaitsForTheOthersOrGivesUp) {
  MemoryStore store;
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_TRUE(storeDepart(store, "d", 2, 3, 5.0));
  });
  EXPECT_TRUE(storeDepart(store, "d", 1, 3, 5.0));
  EXPECT_TRUE(storeDepart(store, "d", 0, 3, 5.0));
  EXPECT_EQ("2", *store.get("d/left", 0.1));  // both others had left
  late.join();
  EXPECT_FALSE(storeDepart(store, "e", 0, 2, 0.05));
  EXPECT_TRUE(storeDepart(store, "f", 0, 1, 0.05));  // a world of one
}

}  // namespace
}  // namespace tide
