// Control messages through the rendezvous store (rdma's send/recv): in
// order per (peer, tag), and every message's key erased once received, so
// that the store does not grow with the number of messages of a long run.

#include "engine/transport/store_mailbox.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "engine/core/clock.h"

namespace tide::transport {
namespace {

std::vector<uint8_t> message(uint32_t i) {
  return {static_cast<uint8_t>(i), static_cast<uint8_t>(i >> 8), 7};
}

TEST(StoreMailbox, KeysDoNotAccumulateOverManyMessages) {
  MemoryStore store;
  StoreMailbox a(store, "t/", 0, 2, nullptr);
  StoreMailbox b(store, "t/", 1, 2, nullptr);
  constexpr uint32_t kMessages = 2000;
  size_t most = 0;
  for (uint32_t i = 0; i < kMessages; ++i) {
    const uint32_t tag = i % 3;
    ASSERT_TRUE(a.send(1, tag, message(i)).isOk());
    ASSERT_TRUE(b.send(0, tag, message(i + 1)).isOk());
    most = std::max(most, store.size());
    auto atB = b.recv(0, tag, 5);
    ASSERT_TRUE(atB.isOk()) << atB.status().toString();
    EXPECT_EQ(*atB, message(i));
    auto atA = a.recv(1, tag, 5);
    ASSERT_TRUE(atA.isOk()) << atA.status().toString();
    EXPECT_EQ(*atA, message(i + 1));
  }
  EXPECT_EQ(most, 2u);  // the messages in flight, never the run's history
  EXPECT_EQ(store.size(), 0u);
}

TEST(StoreMailbox, InOrderPerTagWhileTheReceiverWaits) {
  MemoryStore store;
  StoreMailbox a(store, "", 0, 2, nullptr);
  StoreMailbox b(store, "", 1, 2, nullptr);
  constexpr uint32_t kMessages = 500;
  std::thread sender([&] {
    for (uint32_t i = 0; i < kMessages; ++i) ASSERT_TRUE(a.send(1, i % 2, message(i)).isOk());
  });
  for (uint32_t i = 0; i < kMessages; ++i) {
    auto m = b.recv(0, i % 2, 60);
    ASSERT_TRUE(m.isOk()) << m.status().toString();
    EXPECT_EQ(*m, message(i));
  }
  sender.join();
  EXPECT_EQ(store.size(), 0u);
}

TEST(StoreMailbox, APeerThatLeftFailsTheWaitAtOnce) {
  MemoryStore store;
  std::atomic<bool> gone{false};
  StoreMailbox a(store, "", 0, 2, nullptr);
  StoreMailbox b(
      store, "", 1, 2, [&](int) { return Result<bool>(gone.load()); }, 0.01);
  // Sent just before it left: still received.
  ASSERT_TRUE(a.send(1, 4, message(1)).isOk());
  gone = true;
  auto first = b.recv(0, 4, 60);
  ASSERT_TRUE(first.isOk());
  const double t0 = nowSeconds();
  auto second = b.recv(0, 4, 600);
  ASSERT_FALSE(second.isOk());
  EXPECT_EQ(second.status().code(), Code::kUnavailable);
  EXPECT_NE(second.status().toString().find("left without sending it"), std::string::npos);
  EXPECT_LT(nowSeconds() - t0, 300);  // not the whole timeout
  EXPECT_EQ(store.size(), 0u);
}

TEST(StoreMailbox, RanksOutsideTheWorldAreRefused) {
  MemoryStore store;
  StoreMailbox a(store, "", 0, 2, nullptr);
  EXPECT_EQ(a.send(2, 0, message(0)).code(), Code::kInvalidArgument);
  EXPECT_EQ(a.recv(-1, 0, 0).status().code(), Code::kInvalidArgument);
  auto none = a.recv(1, 0, 0.01);
  EXPECT_EQ(none.status().code(), Code::kTimeout);
}

}  // namespace
}  // namespace tide::transport
