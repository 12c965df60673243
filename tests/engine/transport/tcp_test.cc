// tcp-specific behaviour: striping over streams, handshake rejection of
// stray connections, hung peers timing out, bad configuration.

#include <arpa/inet.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "engine/core/clock.h"
#include "engine/transport/tcp/tcp_connection.h"
#include "engine/transport/tcp/tcp_wire.h"
#include "tests/engine/transport/file_store.h"
#include "tests/engine/transport/transport_test_util.h"

namespace tide::transport::testing {
namespace {

// Bytes received by every TCP socket this process holds.
std::vector<uint64_t> receivedPerSocket() {
  std::vector<uint64_t> out;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    int fd = std::atoi(e.path().filename().c_str());
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    tcp_info info{};
    socklen_t len = sizeof info;
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) continue;
    out.push_back(info.tcpi_bytes_received);
  }
  return out;
}

Request writeReq(const Buffer& src, const RemoteRegion& dst, uint64_t len) {
  Request r;
  r.localRegion = src.region.id;
  r.peer = dst.rank;
  r.remoteRegion = dst.id;
  r.length = len;
  return r;
}

TEST(Tcp, LargeWritesAreStripedOverEveryStream) {
  auto w = makeWorld("tcp", 2, [](TransportConfig& c) {
    c.streams = 4;
    c.options["slice_bytes"] = "256KiB";
  });
  ASSERT_TRUE(w.isOk()) << w.status().toString();
  const uint64_t kLen = 32 << 20;
  auto src = makeBuffer((*w)[0], kLen, 1);
  auto dst = makeBuffer((*w)[1], kLen, 2);
  ASSERT_TRUE(src.isOk() && dst.isOk());
  ASSERT_TRUE((*w)[0].importRegion(dst->region.descriptor).isOk());
  auto id = (*w)[0].submit(std::vector<Request>{writeReq(*src, dst->region.descriptor, kLen)});
  ASSERT_TRUE(id.isOk());
  ASSERT_TRUE((*w)[0].wait(*id, 60).isOk());
  EXPECT_EQ(src->bytes, dst->bytes);
  int busy = 0;
  for (uint64_t n : receivedPerSocket()) busy += n >= kLen / 8;
  EXPECT_EQ(busy, 4) << "each of the 4 streams should carry about a quarter";
}

TEST(Tcp, StrayConnectionsAreRejectedAndTheWorldStillForms) {
  MemoryStore store;
  auto config = [&](int rank) {
    TransportConfig c;
    c.backend = "tcp";
    c.rank = rank;
    c.worldSize = 2;
    c.store = &store;
    c.streams = 2;
    c.connectTimeoutSeconds = 30;
    return c;
  };
  Result<std::unique_ptr<Transport>> r0 = TIDE_ERROR(Code::kInternal, "not run");
  std::thread t0([&] { r0 = createTransport(config(0)); });
  auto addr = store.get("tcp/addr/0", 10);
  ASSERT_TRUE(addr.isOk());
  auto token = store.get("tcp/token", 10);
  ASSERT_TRUE(token.isOk());
  auto closedByPeer = [](int fd) {
    char c;
    Deadline d = Deadline::after(10);
    while (!d.expired()) {
      ssize_t n = ::recv(fd, &c, 1, 0);
      if (n == 0 || (n < 0 && errno == ECONNRESET)) return true;
      if (n > 0) return false;  // a reply means it was accepted
    }
    return false;
  };
  {  // right shape, wrong token
    auto fd = tcp::connectTo(*addr, Deadline::after(5));
    ASSERT_TRUE(fd.isOk());
    tcp::Hello h;
    h.token = std::stoull(*token, nullptr, 16) ^ 1;
    h.rank = 1;
    h.stream = 0;
    h.worldSize = 2;
    h.target = 0;
    ASSERT_EQ(::send(fd->get(), &h, sizeof h, 0), static_cast<ssize_t>(sizeof h));
    EXPECT_TRUE(closedByPeer(fd->get())) << "a hello with a bad token must be dropped";
  }
  {  // garbage
    auto fd = tcp::connectTo(*addr, Deadline::after(5));
    ASSERT_TRUE(fd.isOk());
    const char junk[64] = "GET / HTTP/1.0\r\n\r\n";
    ASSERT_EQ(::send(fd->get(), junk, sizeof junk, 0), static_cast<ssize_t>(sizeof junk));
    EXPECT_TRUE(closedByPeer(fd->get()));
  }
  auto r1 = createTransport(config(1));
  t0.join();
  ASSERT_TRUE(r0.isOk()) << r0.status().toString();
  ASSERT_TRUE(r1.isOk()) << r1.status().toString();
  auto src = makeBuffer(**r0, 1000, 3);
  auto dst = makeBuffer(**r1, 1000, 4);
  ASSERT_TRUE((*r0)->importRegion(dst->region.descriptor).isOk());
  auto id = (*r0)->submit(std::vector<Request>{writeReq(*src, dst->region.descriptor, 1000)});
  ASSERT_TRUE(id.isOk());
  ASSERT_TRUE((*r0)->wait(*id, 30).isOk());
  EXPECT_EQ(src->bytes, dst->bytes);
}

// A plain socket on 127.0.0.1 (not tide's connect path) that does not carry
// the run's token is refused at the hello: it gets no reply and takes no
// slot, so the real peer still connects and bytes still move.
TEST(Tcp, RawClientWithoutTheRunTokenCannotConnect) {
  MemoryStore store;
  auto config = [&](int rank) {
    TransportConfig c;
    c.backend = "tcp";
    c.rank = rank;
    c.worldSize = 2;
    c.store = &store;
    c.streams = 1;
    c.connectTimeoutSeconds = 60;
    return c;
  };
  Result<std::unique_ptr<Transport>> r0 = TIDE_ERROR(Code::kInternal, "not run");
  std::thread t0([&] { r0 = createTransport(config(0)); });
  auto addr = store.get("tcp/addr/0", 10);
  auto tokenText = store.get("tcp/token", 10);
  ASSERT_TRUE(addr.isOk() && tokenText.isOk());
  auto where = tcp::splitHostPort(*addr);
  auto token = tcp::parseRunToken(*tokenText);
  ASSERT_TRUE(where.isOk() && token.isOk());
  ASSERT_EQ("127.0.0.1", where->host);

  // The hello rank 1's only stream would send, but for its token.
  auto helloWith = [&](uint64_t t, int32_t world) {
    tcp::Hello h;
    h.token = t;
    h.rank = 1;
    h.stream = 0;
    h.worldSize = world;
    h.target = 0;
    return std::string(reinterpret_cast<const char*>(&h), sizeof h);
  };
  struct Case {
    const char* what;
    std::string bytes;
  };
  const Case cases[] = {
      {"the token with one bit flipped", helloWith(*token ^ 1, 2)},
      {"no token (zero)", helloWith(0, 2)},
      {"the token of another run", helloWith(*token + 0x100000000ull, 2)},
      {"the token but another world", helloWith(*token, 3)},
      {"half a hello, then silence", helloWith(*token, 2).substr(0, 12)},
      {"garbage", std::string(64, '\x7f')},
  };
  for (const Case& c : cases) {
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    ASSERT_TRUE(fd.valid());
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(where->port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(0, ::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a)) << c.what;
    ASSERT_EQ(static_cast<ssize_t>(c.bytes.size()),
              ::send(fd.get(), c.bytes.data(), c.bytes.size(), MSG_NOSIGNAL));
    timeval tv{10, 0};
    ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char reply[sizeof(tcp::HelloReply)];
    ssize_t n = ::recv(fd.get(), reply, sizeof reply, 0);
    EXPECT_TRUE(n == 0 || (n < 0 && errno == ECONNRESET))
        << c.what << ": " << (n > 0 ? "got a reply (accepted)" : "not closed within 10 s");
  }
  auto r1 = createTransport(config(1));
  t0.join();
  ASSERT_TRUE(r0.isOk()) << r0.status().toString();
  ASSERT_TRUE(r1.isOk()) << r1.status().toString();
  auto src = makeBuffer(**r1, 4096, 5);
  auto dst = makeBuffer(**r0, 4096, 6);
  ASSERT_TRUE(src.isOk() && dst.isOk());
  ASSERT_TRUE((*r1)->importRegion(dst->region.descriptor).isOk());
  auto id = (*r1)->submit(std::vector<Request>{writeReq(*src, dst->region.descriptor, 4096)});
  ASSERT_TRUE(id.isOk());
  ASSERT_TRUE((*r1)->wait(*id, 30).isOk());
  EXPECT_EQ(src->bytes, dst->bytes);
}

TEST(Tcp, ListensOnLoopbackUnlessAnAddressIsGiven) {
  EXPECT_EQ("127.0.0.1", TransportConfig{}.listenAddress);
  auto w = makeWorld("tcp", 2);
  ASSERT_TRUE(w.isOk()) << w.status().toString();
  for (int r = 0; r < 2; ++r) {
    auto addr = w->store->get("tcp/addr/" + std::to_string(r), 1);
    ASSERT_TRUE(addr.isOk());
    auto where = tcp::splitHostPort(*addr);
    ASSERT_TRUE(where.isOk()) << *addr;
    EXPECT_EQ("127.0.0.1", where->host) << "rank " << r;
  }
}

// The peer dies with the thread that spawned it, stopped or not: a test
// killed by its timeout leaves nothing holding its output open.
TEST(Tcp, ChildPeerDiesWithTheThreadThatSpawnedIt) {
  ScratchDir dir("tide-orphan");
  ChildPeer child;
  Status spawned;
  bool running = false;  // it runs transport_peer: it asked for the signal before exec
  std::thread spawner([&] {
    spawned = child.spawn(dir.str(), "tcp", 1, 2, 4096);
    if (!spawned.isOk()) return;
    std::string cmdline = "/proc/" + std::to_string(child.pid()) + "/cmdline";
    for (Deadline d = Deadline::after(5); !running && !d.expired();) {
      std::ifstream in(cmdline);
      std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      running = all.find("transport_peer") != std::string::npos;
      if (!running) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    child.signal(SIGSTOP);
  });
  spawner.join();
  ASSERT_TRUE(spawned.isOk()) << spawned.toString();
  ASSERT_TRUE(running) << "transport_peer never started";
  // Killed by SIGKILL, not exited: wait for it without reaping it (the
  // ChildPeer does that).
  siginfo_t si{};
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(child.pid()), &si, WEXITED | WNOWAIT), 0);
  EXPECT_EQ(si.si_code, CLD_KILLED) << "the peer exited on its own (code " << si.si_code << ")";
  EXPECT_EQ(si.si_status, SIGKILL);
}

TEST(Tcp, HungPeerTimesOutAfterOpTimeout) {
  ScratchDir dir("tide-tcp");
  FileStore store(dir.str());
  const uint64_t kLen = 64 << 20;
  ChildPeer child;
  ASSERT_TRUE(child.spawn(dir.str(), "tcp", 1, 2, kLen).isOk());
  TransportConfig c;
  c.backend = "tcp";
  c.worldSize = 2;
  c.store = &store;
  c.opTimeoutSeconds = 2;
  auto t = createTransport(c);
  Status started = child.waitReady(30);
  ASSERT_TRUE(t.isOk()) << t.status().toString();
  ASSERT_TRUE(started.isOk()) << started.toString();
  auto desc = RemoteRegion::deserialize(store.get("desc/1", 10).value());
  ASSERT_TRUE(desc.isOk());
  ASSERT_TRUE((*t)->importRegion(*desc).isOk());
  auto src = makeBuffer(**t, kLen, 5);
  child.signal(SIGSTOP);  // alive but silent: only the op timeout can tell
  auto id = (*t)->submit(std::vector<Request>{writeReq(*src, *desc, kLen)});
  ASSERT_TRUE(id.isOk());
  Stopwatch sw;
  Status s = (*t)->wait(*id, 60);
  EXPECT_EQ(s.code(), Code::kTimeout) << s.toString();
  EXPECT_GT(sw.seconds(), 1.0);
  EXPECT_LT(sw.seconds(), 10.0) << "bounded by opTimeoutSeconds";
  child.signal(SIGKILL);
}

TEST(Tcp, MissingPeerFailsAfterConnectTimeout) {
  MemoryStore store;
  TransportConfig c;
  c.backend = "tcp";
  c.worldSize = 2;
  c.store = &store;
  c.connectTimeoutSeconds = 1;
  Stopwatch sw;
  auto t = createTransport(c);
  EXPECT_EQ(t.status().code(), Code::kTimeout) << t.status().toString();
  EXPECT_LT(sw.seconds(), 10);
}

TEST(Tcp, BadConfigurationIsRejected) {
  MemoryStore store;
  TransportConfig c;
  c.backend = "tcp";
  c.worldSize = 2;
  c.store = &store;
  c.streams = 0;
  EXPECT_EQ(createTransport(c).status().code(), Code::kInvalidArgument);
  c.streams = 2;
  c.options["slice_bytes"] = "0";
  EXPECT_EQ(createTransport(c).status().code(), Code::kInvalidArgument);
  c.options["slice_bytes"] = "12XB";
  EXPECT_FALSE(createTransport(c).isOk());
}

TEST(Tcp, DeviceMemoryIsNotSupported) {
  auto w = makeWorld("tcp", 1);
  ASSERT_TRUE(w.isOk());
  char b[16];
  EXPECT_EQ((*w)[0].registerRegion(b, sizeof b, MemoryKind::kCuda).status().code(),
            Code::kUnimplemented);
}

}  // namespace
}  // namespace tide::transport::testing
