#include "engine/exec/rendezvous/tcp_store.h"

#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "engine/core/clock.h"
#include "engine/core/socket_io.h"
#include "engine/transport/store_mailbox.h"

namespace tide::exec {
namespace {

TEST(TcpStore, SetGetAddAcrossClients) {
  auto server = orThrow(TcpStore::host("127.0.0.1", 0, "tok"));
  ASSERT_GT(server->port(), 0);
  auto a = orThrow(TcpStore::connect("127.0.0.1", server->port(), "tok", 5));
  auto b = orThrow(TcpStore::connect("127.0.0.1", server->port(), "tok", 5));
  ASSERT_TRUE(a->set("k", std::string("v\0w", 3)).isOk());
  EXPECT_EQ(std::string("v\0w", 3), orThrow(b->get("k", 1)));
  EXPECT_EQ(std::string("v\0w", 3), orThrow(server->get("k", 1)));
  EXPECT_EQ(1, orThrow(a->add("c", 1)));
  EXPECT_EQ(11, orThrow(b->add("c", 10)));
  EXPECT_EQ(8, orThrow(server->add("c", -3)));
  EXPECT_EQ("8", orThrow(a->get("c", 1)));
  EXPECT_EQ(Code::kInvalidArgument, a->add("k", 1).status().code());  // not a counter
  std::string big(1 << 20, 'x');
  ASSERT_TRUE(b->set("big", big).isOk());
  EXPECT_EQ(big, orThrow(a->get("big", 1)));
}

TEST(TcpStore, EraseDropsTheKeyForEveryClient) {
  auto server = orThrow(TcpStore::host("127.0.0.1", 0, "tok"));
  auto a = orThrow(TcpStore::connect("127.0.0.1", server->port(), "tok", 5));
  auto b = orThrow(TcpStore::connect("127.0.0.1", server->port(), "tok", 5));
  ASSERT_TRUE(a->set("k", "v").isOk());
  ASSERT_TRUE(a->set("keep", "v").isOk());
  EXPECT_EQ(2u, server->hostedServer()->size());
  ASSERT_TRUE(b->erase("k").isOk());
  EXPECT_EQ(Code::kTimeout, a->get("k", 0.05).status().code());
  EXPECT_TRUE(b->erase("k").isOk());  // gone already: nothing to do
  ASSERT_TRUE(server->erase("keep").isOk());
  EXPECT_EQ(0u, server->hostedServer()->size());
}

// rdma's control messages go through the store; over a long run they must
// not pile up there (one key per message, erased by its receiver).
TEST(TcpStore, ControlMessagesLeaveNoKeysBehind) {
  auto server = orThrow(TcpStore::host("127.0.0.1", 0, "tok"));
  auto a = orThrow(TcpStore::connect("127.0.0.1", server->port(), "tok", 5));
  auto b = orThrow(TcpStore::connect("127.0.0.1", server->port(), "tok", 5));
  transport::StoreMailbox ma(*a, "transport/", 0, 2, nullptr);
  transport::StoreMailbox mb(*b, "transport/", 1, 2, nullptr);
  size_t most = 0;
  for (uint32_t i = 0; i < 1000; ++i) {
    const std::vector<uint8_t> m = {static_cast<uint8_t>(i), static_cast<uint8_t>(i >> 8)};
    ASSERT_TRUE(ma.send(1, i % 4, m).isOk());
    most = std::max(most, server->hostedServer()->size());
    auto got = mb.recv(0, i % 4, 10);
    ASSERT_TRUE(got.isOk()) << got.status().toString();
    EXPECT_EQ(m, *got);
  }
  EXPECT_EQ(1u, most);
  EXPECT_EQ(0u, server->hostedServer()->size());
}

TEST(TcpStore, GetBlocksUntilSetAndTimesOut) {
  auto server = orThrow(TcpStore::host("127.0.0.1", 0, "tok"));
  auto a = orThrow(TcpStore::connect("127.0.0.1", server->port(), "tok", 5));
  auto waiter = std::async(std::launch::async, [&] { return a->get("late", 10); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  // The same client sets while its other connection is blocked in get().
  ASSERT_TRUE(a->set("late", "here").isOk());
  EXPECT_EQ("here", orThrow(waiter.get()));
  Stopwatch sw;
  EXPECT_EQ(Code::kTimeout, a->get("never", 0.2).status().code());
  EXPECT_LT(sw.seconds(), 3);
  EXPECT_TRUE(storeBarrier(*a, "b", 1, 1).isOk());
}

TEST(TcpStore, WrongTokenIsRefused) {
  auto server = orThrow(TcpStore::host("127.0.0.1", 0, "right"));
  auto c = TcpStore::connect("127.0.0.1", server->port(), "wrong", 5);
  ASSERT_FALSE(c.isOk());
  EXPECT_EQ(Code::kPermissionDenied, c.status().code());
  EXPECT_NE(std::string::npos, c.status().message().find("token"));
  // A client speaking garbage is dropped without harming the server.
  auto raw = orThrow(connectTcp("127.0.0.1", server->port(), 2));
  ASSERT_TRUE(sendAll(raw.get(), "GET / HTTP/1.0\r\n\r\n", 18));
  auto ok = orThrow(TcpStore::connect("127.0.0.1", server->port(), "right", 5));
  EXPECT_TRUE(ok->set("x", "y").isOk());
}

TEST(TcpStore, UnreachableMasterFailsInBoundedTime) {
  int port = 0;
  {
    auto l = orThrow(listenTcp("127.0.0.1", 0, 1));
    port = boundPort(l.get());
  }  // closed: nobody listens there now
  Stopwatch sw;
  auto c = TcpStore::connect("127.0.0.1", port, "tok", 0.5);
  ASSERT_FALSE(c.isOk());
  EXPECT_EQ(Code::kUnavailable, c.status().code());
  EXPECT_NE(std::string::npos, c.status().message().find("unreachable"));
  EXPECT_LT(sw.seconds(), 5);
}

TEST(TcpStore, ServerGoneGivesClearError) {
  auto server = orThrow(TcpStore::host("127.0.0.1", 0, "tok"));
  auto a = orThrow(TcpStore::connect("127.0.0.1", server->port(), "tok", 0.5));
  auto waiter = std::async(std::launch::async, [&] { return a->get("never", 60); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  Stopwatch sw;
  server.reset();
  auto r = waiter.get();
  EXPECT_FALSE(r.isOk());
  EXPECT_LT(sw.seconds(), 5);
  EXPECT_FALSE(a->set("k", "v").isOk());
}

// A run launched by mpirun, Slurm or torchrun: rank 0 hosts the store and
// is the last to reach the final barrier. It leaves only after every rank
// has had the barrier's answer (storeDepart), so none loses the store in
// the middle of a reply.
TEST(TcpStore, HostLeavesAfterEveryRankHasItsAnswer) {
  constexpr int kRanks = 8;
  for (int round = 0; round < 20; ++round) {
    auto host = orThrow(TcpStore::host("127.0.0.1", 0, "tok"));
    std::vector<std::future<Status>> others;
    for (int r = 1; r < kRanks; ++r) {
      others.push_back(std::async(std::launch::async, [&, r]() -> Status {
        TIDE_ASSIGN_OR_RETURN(auto c, TcpStore::connect("127.0.0.1", host->port(), "tok", 5));
        TIDE_RETURN_IF_ERROR(storeBarrier(*c, "end", kRanks, 30));
        storeDepart(*c, "end", r, kRanks, 30);
        return Status::ok();
      }));
    }
    // Rank 0 arrives last: its own arrival completes the barrier.
    while (orThrow(host->add("end/count", 0)) < kRanks - 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_TRUE(storeBarrier(*host, "end", kRanks, 30).isOk());
    EXPECT_TRUE(storeDepart(*host, "end", 0, kRanks, 30));
    host.reset();  // the hosting process exits
    for (auto& f : others) {
      const Status st = f.get();
      EXPECT_TRUE(st.isOk()) << "round " << round << ": " << st.toString();
    }
  }
}

TEST(TcpStore, ClientStartsBeforeServer) {
  int port = 0;
  {
    auto l = orThrow(listenTcp("127.0.0.1", 0, 1));
    port = boundPort(l.get());
  }
  auto client = std::async(std::launch::async,
                           [&] { return TcpStore::connect("127.0.0.1", port, "tok", 10); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto server = orThrow(TcpStore::host("127.0.0.1", port, "tok"));
  auto c = orThrow(client.get());
  ASSERT_TRUE(c->set("a", "b").isOk());
  EXPECT_EQ("b", orThrow(server->get("a", 1)));
}

}  // namespace
}  // namespace tide::exec
