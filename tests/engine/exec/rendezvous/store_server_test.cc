// Who may write to the rendezvous store: a client without the run's token
// (none, a wrong one, garbage) is refused at the hello, and a request it
// pipelined behind the hello is never applied. The clients here are plain
// sockets on 127.0.0.1 that write the wire format by hand.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "engine/core/clock.h"
#include "engine/core/fd.h"
#include "engine/exec/launch/launcher.h"
#include "engine/exec/rendezvous/rank_env.h"
#include "engine/exec/rendezvous/tcp_store.h"

namespace tide::exec {
namespace {

const std::string kToken = "the-run-token";

UniqueFd rawConnect(int port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  EXPECT_TRUE(fd.valid());
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(0, ::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a)) << errno;
  timeval tv{10, 0};  // a test that hangs fails instead
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

template <typename T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}
void putString(std::string& out, const std::string& s) {
  put(out, static_cast<uint32_t>(s.size()));
  out += s;
}
std::string hello(const std::string& token, uint32_t magic = kStoreMagic) {
  std::string out;
  put(out, magic);
  putString(out, token);
  return out;
}
std::string setRequest(const std::string& key, const std::string& value) {
  std::string out;
  put(out, static_cast<uint8_t>(StoreOp::kSet));
  putString(out, key);
  putString(out, value);
  return out;
}
std::string addRequest(const std::string& key, int64_t delta) {
  std::string out;
  put(out, static_cast<uint8_t>(StoreOp::kAdd));
  putString(out, key);
  put(out, delta);
  return out;
}

void sendBytes(int fd, const std::string& bytes) {
  ASSERT_EQ(static_cast<ssize_t>(bytes.size()),
            ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL));
}

// Everything the server sends until it closes (or 10 s pass).
std::string readUntilClosed(int fd) {
  std::string got;
  char buf[256];
  while (true) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return got;
    got.append(buf, static_cast<size_t>(n));
  }
}

bool present(TcpStore& store, const std::string& key) {
  return store.get(key, 0).isOk();
}

TEST(StoreServer, RawClientWithTheTokenMayWrite) {
  // The hand-written wire format is right: the refusals below are the token's.
  auto server = orThrow(TcpStore::host("127.0.0.1", 0, kToken));
  UniqueFd fd = rawConnect(server->port());
  sendBytes(fd.get(), hello(kToken) + setRequest("k", "v"));
  char reply[2] = {};
  ASSERT_EQ(2, ::recv(fd.get(), reply, 2, MSG_WAITALL));
  EXPECT_EQ(1, reply[0]) << "hello accepted";
  EXPECT_EQ(0, reply[1]) << "set acknowledged";
  EXPECT_EQ("v", orThrow(server->get("k", 5)));
}

TEST(StoreServer, ClientWithoutTheTokenCannotWrite) {
  auto server = orThrow(TcpStore::host("127.0.0.1", 0, kToken));
  struct Case {
    const char* what;
    std::string bytes;
  };
  std::string longToken;
  put(longToken, kStoreMagic);
  put(longToken, static_cast<uint32_t>(kMaxStoreToken + 1));
  const Case cases[] = {
      {"no hello at all", setRequest("stolen", "x")},
      {"a wrong token", hello("not-the-token") + setRequest("stolen", "x")},
      {"the token with one byte more", hello(kToken + "!") + setRequest("stolen", "x")},
      {"the token less its last byte",
       hello(kToken.substr(0, kToken.size() - 1)) + setRequest("stolen", "x")},
      {"an empty token", hello("") + setRequest("stolen", "x")},
      {"the token behind a wrong magic", hello(kToken, 0x12345678) + setRequest("stolen", "x")},
      {"a token length over the limit", longToken + std::string(64, 'a')},
      {"garbage", std::string("GET / HTTP/1.0\r\n\r\n") + setRequest("stolen", "x")},
  };
  for (const Case& c : cases) {
    UniqueFd fd = rawConnect(server->port());
    sendBytes(fd.get(), c.bytes);
    const std::string got = readUntilClosed(fd.get());
    // One refusal byte, then the server closes: no reply to the request.
    EXPECT_EQ(std::string(1, '\0'), got) << c.what;
    EXPECT_FALSE(present(*server, "stolen")) << c.what << ": the key was written";
  }
  // The real clients are unaffected.
  auto client = orThrow(TcpStore::connect("127.0.0.1", server->port(), kToken, 5));
  ASSERT_TRUE(client->set("real", "1").isOk());
  EXPECT_EQ("1", orThrow(server->get("real", 5)));
}

TEST(StoreServer, SilentClientDoesNotBlockOthers) {
  auto server = orThrow(TcpStore::host("127.0.0.1", 0, kToken));
  UniqueFd silent = rawConnect(server->port());
  sendBytes(silent.get(), std::string(3, '\0'));  // a partial magic, then nothing
  auto client = orThrow(TcpStore::connect("127.0.0.1", server->port(), kToken, 5));
  ASSERT_TRUE(client->set("k", "v").isOk());
  EXPECT_EQ("v", orThrow(client->get("k", 5)));
}

TEST(StoreServer, CounterThatIsNotANumberIsRefusedNotThrown) {
  auto server = orThrow(TcpStore::host("127.0.0.1", 0, kToken));
  auto client = orThrow(TcpStore::connect("127.0.0.1", server->port(), kToken, 5));
  for (const char* bad : {"abc", "12abc", "", " 5", "99999999999999999999"}) {
    ASSERT_TRUE(client->set("c", bad).isOk());
    auto r = client->add("c", 1);
    ASSERT_FALSE(r.isOk()) << "'" << bad << "'";
    EXPECT_EQ(Code::kInvalidArgument, r.status().code()) << bad;
    EXPECT_EQ(bad, orThrow(server->get("c", 1))) << "a refused add leaves the value";
  }
  ASSERT_TRUE(client->set("c", std::to_string(INT64_MAX)).isOk());
  EXPECT_EQ(Code::kInvalidArgument, client->add("c", 1).status().code()) << "overflow";
  // The same over a raw connection: a 'bad request' answer, the connection stays.
  UniqueFd fd = rawConnect(server->port());
  sendBytes(fd.get(), hello(kToken) + addRequest("c", 1) + setRequest("after", "ok"));
  char reply[1 + 1 + 8 + 1] = {};
  ASSERT_EQ(static_cast<ssize_t>(sizeof reply), ::recv(fd.get(), reply, sizeof reply, MSG_WAITALL));
  EXPECT_EQ(1, reply[0]);
  EXPECT_EQ(static_cast<char>(StoreReply::kBad), reply[1]);
  EXPECT_EQ(0, reply[10]);
  EXPECT_EQ("ok", orThrow(server->get("after", 5)));
}

TEST(StoreServer, ListensOnLoopbackByDefault) {
  EXPECT_EQ("127.0.0.1", LaunchOptions{}.masterAddr);
  EXPECT_EQ("127.0.0.1", RankEnv{}.masterAddr);
}

}  // namespace
}  // namespace tide::exec
