#include "engine/core/socket_io.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <thread>

#include "engine/core/clock.h"

namespace tide {
namespace {

struct Pair {
  UniqueFd a, b;
};

Pair socketPair() {
  int fds[2];
  EXPECT_EQ(0, ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds));
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

TEST(SocketIo, WholeBuffersBothWays) {
  Pair p = socketPair();
  std::string big(1 << 20, 'x');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7);
  std::thread writer([&] { EXPECT_TRUE(sendAll(p.a.get(), big).isOk()); });
  std::string got(big.size(), '\0');
  ASSERT_TRUE(recvExact(p.b.get(), got.data(), got.size()).isOk());
  writer.join();
  EXPECT_EQ(big, got);
}

TEST(SocketIo, ClosedPeerIsUnavailable) {
  Pair p = socketPair();
  ASSERT_TRUE(sendAll(p.a.get(), "abc").isOk());
  p.a.reset();
  char buf[8];
  Status s = recvExact(p.b.get(), buf, sizeof buf);  // 3 bytes, then EOF
  EXPECT_EQ(Code::kUnavailable, s.code()) << s.toString();
  s = sendAll(p.b.get(), "more");  // EPIPE, without SIGPIPE
  EXPECT_EQ(Code::kUnavailable, s.code()) << s.toString();
  EXPECT_NE(std::string::npos, s.message().find("pipe")) << "keeps errno's text: " << s.message();
}

TEST(SocketIo, TimeoutsAreTimeouts) {
  Pair p = socketPair();
  setIoTimeout(p.b.get(), 0.05);
  char c;
  EXPECT_EQ(Code::kTimeout, recvExact(p.b.get(), &c, 1).code());
  setIoTimeout(p.b.get(), 0);
  EXPECT_EQ(Code::kTimeout, recvExact(p.b.get(), &c, 1, Deadline::after(0.05)).code());
  ASSERT_TRUE(sendAll(p.a.get(), "z").isOk());
  ASSERT_TRUE(recvExact(p.b.get(), &c, 1, Deadline::after(10)).isOk());
  EXPECT_EQ('z', c);
}

TEST(SocketIo, SendAllWritesToAPipe) {
  int fds[2];
  ASSERT_EQ(0, ::pipe(fds));
  UniqueFd r(fds[0]), w(fds[1]);
  ASSERT_TRUE(sendAll(w.get(), "line\n").isOk());
  char buf[5];
  ASSERT_EQ(5, ::read(r.get(), buf, 5));
  EXPECT_EQ(0, std::memcmp(buf, "line\n", 5));
}

TEST(SocketIo, ListenConnectAndRefusal) {
  auto l = listenTcp("127.0.0.1", 0, 4);
  ASSERT_TRUE(l.isOk()) << l.status().toString();
  const int port = boundPort(l->get());
  ASSERT_GT(port, 0);
  auto c = connectTcp("127.0.0.1", port, Deadline::after(5));
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  UniqueFd server(::accept(l->get(), nullptr, nullptr));
  ASSERT_TRUE(server.valid());
  ASSERT_TRUE(sendAll(c->get(), "hi").isOk());
  char buf[2];
  ASSERT_TRUE(recvExact(server.get(), buf, 2).isOk());
  l->reset();  // nobody listens there now
  Stopwatch sw;
  auto refused = connectTcp("127.0.0.1", port, Deadline::after(0.3));
  EXPECT_EQ(Code::kUnavailable, refused.status().code());
  EXPECT_NE(std::string::npos, refused.status().message().find("unreachable"));
  EXPECT_LT(sw.seconds(), 5);
  EXPECT_EQ(Code::kInvalidArgument, connectTcp("127.0.0.1", 70000, 1.0).status().code());
}

}  // namespace
}  // namespace tide
