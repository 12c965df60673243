// shm backend specifics: both copy paths (memcpy between threads of one
// process, process_vm_* between processes), the shared region table checks,
// notifications, the control channel, and a peer process that dies.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <future>
#include <numeric>
#include <thread>

#include "engine/core/clock.h"
#include "engine/exec/rendezvous/tcp_store.h"
#include "engine/transport/registry.h"
#include "tests/sanitizers.h"

namespace tide::transport {
namespace {

using Pair = std::pair<std::unique_ptr<Transport>, std::unique_ptr<Transport>>;

TransportConfig config(Store& store, int rank, const std::string& copy) {
  TransportConfig c;
  c.backend = "shm";
  c.rank = rank;
  c.worldSize = 2;
  c.store = &store;
  c.streams = 2;
  c.connectTimeoutSeconds = 10;
  c.opTimeoutSeconds = 5;
  c.options["copy"] = copy;
  return c;
}

Pair makePair(Store& store, const std::string& copy) {
  auto f = std::async(std::launch::async,
                      [&] { return orThrow(createTransport(config(store, 1, copy))); });
  auto a = orThrow(createTransport(config(store, 0, copy)));
  return {std::move(a), f.get()};
}

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 131 + seed);
  return v;
}

Status runOne(Transport& t, const Request& r) {
  auto b = t.submit(std::span<const Request>(&r, 1));
  if (!b.isOk()) return b.status();
  return t.wait(*b, 10);
}

class ShmCopyModes : public ::testing::TestWithParam<std::string> {};

TEST_P(ShmCopyModes, WriteReadAtAwkwardOffsets) {
  MemoryStore store;
  auto [a, b] = makePair(store, GetParam());
  const size_t n = 3 * (4u << 20) + 4095;  // several slices plus a ragged tail
  auto src = pattern(n, 7);
  std::vector<uint8_t> dst(n + 64, 0), back(n, 0);
  auto ls = orThrow(a->registerRegion(src.data(), src.size()));
  auto lb = orThrow(a->registerRegion(back.data(), back.size()));
  auto rd = orThrow(b->registerRegion(dst.data(), dst.size()));
  ASSERT_TRUE(a->importRegion(rd.descriptor).isOk());

  Request w{Op::kWrite, ls.id, 1, 1, rd.id, 33, n - 1, 0};
  Request r{Op::kRead, lb.id, 0, 1, rd.id, 33, n - 1, 0};
  std::vector<Request> batch{w, r};  // read-after-write inside one batch
  auto id = orThrow(a->submit(batch));
  ASSERT_TRUE(a->wait(id, 10).isOk());
  EXPECT_EQ(0, std::memcmp(dst.data() + 33, src.data() + 1, n - 1));
  EXPECT_EQ(0, dst[32]);
  EXPECT_EQ(0, dst[33 + n - 1]);
  EXPECT_EQ(0, std::memcmp(back.data(), src.data() + 1, n - 1));
  // Zero-length and one-byte requests.
  EXPECT_TRUE(runOne(*a, {Op::kWrite, ls.id, 0, 1, rd.id, 0, 0, 0}).isOk());
  EXPECT_TRUE(runOne(*a, {Op::kWrite, ls.id, 5, 1, rd.id, 0, 1, 0}).isOk());
  EXPECT_EQ(src[5], dst[0]);
}

TEST_P(ShmCopyModes, RejectsBadRequestsAndLeavesTargetUntouched) {
  MemoryStore store;
  auto [a, b] = makePair(store, GetParam());
  std::vector<uint8_t> src(1 << 20, 0xab), dst(1 << 20, 0);
  auto ls = orThrow(a->registerRegion(src.data(), src.size()));
  auto rd = orThrow(b->registerRegion(dst.data(), dst.size()));
  ASSERT_TRUE(a->importRegion(rd.descriptor).isOk());

  // A request that starts inside but ends outside: no byte may be written.
  Status s = runOne(*a, {Op::kWrite, ls.id, 0, 1, rd.id, dst.size() - 100, 200, 0});
  EXPECT_EQ(Code::kOutOfRange, s.code()) << s.toString();
  // Large request, only its tail is out of bounds (several slices).
  s = runOne(*a, {Op::kWrite, ls.id, 0, 1, rd.id, 1, dst.size(), 0});
  EXPECT_EQ(Code::kOutOfRange, s.code()) << s.toString();

  RemoteRegion forged = rd.descriptor;
  forged.key ^= 1;
  ASSERT_TRUE(a->importRegion(forged).isOk());
  s = runOne(*a, {Op::kWrite, ls.id, 0, 1, rd.id, 0, 16, 0});
  EXPECT_EQ(Code::kPermissionDenied, s.code()) << s.toString();
  ASSERT_TRUE(a->importRegion(rd.descriptor).isOk());

  // Local bounds and unknown regions fail submit itself.
  EXPECT_FALSE(
      a->submit(std::vector<Request>{{Op::kWrite, ls.id, 1, 1, rd.id, 0, src.size(), 0}}).isOk());
  EXPECT_FALSE(a->submit(std::vector<Request>{{Op::kWrite, ls.id, 0, 1, 999, 0, 1, 0}}).isOk());
  EXPECT_FALSE(a->submit(std::vector<Request>{{Op::kWrite, ls.id, 0, 7, rd.id, 0, 1, 0}}).isOk());

  // Deregistered on the target: the stale descriptor is refused.
  ASSERT_TRUE(b->deregisterRegion(rd.id).isOk());
  s = runOne(*a, {Op::kWrite, ls.id, 0, 1, rd.id, 0, 16, 0});
  EXPECT_EQ(Code::kNotFound, s.code()) << s.toString();
  for (uint8_t v : dst) ASSERT_EQ(0, v);
}

TEST_P(ShmCopyModes, WriteWithImmArrivesAfterData) {
  MemoryStore store;
  auto [a, b] = makePair(store, GetParam());
  auto src = pattern(1 << 20, 3);
  std::vector<uint8_t> dst(src.size(), 0);
  auto ls = orThrow(a->registerRegion(src.data(), src.size()));
  auto rd = orThrow(b->registerRegion(dst.data(), dst.size()));
  ASSERT_TRUE(a->importRegion(rd.descriptor).isOk());
  EXPECT_TRUE(b->capabilities().writeWithImm);
  std::vector<Request> reqs{
      {Op::kWrite, ls.id, 0, 1, rd.id, 0, src.size() / 2, 0},
      {Op::kWriteWithImm, ls.id, src.size() / 2, 1, rd.id, src.size() / 2, src.size() / 2, 42}};
  auto id = orThrow(a->submit(reqs));
  auto note = orThrow(b->waitNotification(10));
  EXPECT_EQ(0, note.peer);
  EXPECT_EQ(42u, note.imm);
  EXPECT_EQ(0, std::memcmp(dst.data(), src.data(), src.size()));
  EXPECT_TRUE(a->wait(id, 10).isOk());
  EXPECT_EQ(Code::kTimeout, b->waitNotification(0.05).status().code());
}

INSTANTIATE_TEST_SUITE_P(Shm, ShmCopyModes, ::testing::Values("auto", "process_vm"));

// Mappings of memfd-backed regions in this process (the owner's included).
int memfdMappings() {
  std::ifstream maps("/proc/self/maps");
  int n = 0;
  for (std::string line; std::getline(maps, line);)
    n += line.find("memfd:tide-shm-region") != std::string::npos;
  return n;
}

bool waitFor(const std::function<bool()>& cond, double seconds) {
  Deadline d = Deadline::after(seconds);
  while (!cond()) {
    if (d.expired()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// copy=map takes the cross-process path (the peer maps the region's memfd)
// between threads, so its checks and mapping lifetime are testable here.
TEST(Shm, MemfdRegionMappedByPeerAndUnmappedOnDeregister) {
  MemoryStore store;
  auto [a, b] = makePair(store, "map");
  const size_t n = 2 * (4u << 20) + 4095;
  auto src = pattern(n, 11);
  std::vector<uint8_t> back(n, 0);
  auto mem = orThrow(b->allocateHost(n + 8192));
  ASSERT_EQ(0u, reinterpret_cast<uintptr_t>(mem.data()) % 4096);
  std::memset(mem.data(), 0, mem.size());
  char* dst = static_cast<char*>(mem.data()) + 4096 + 3;  // region inside the block, unaligned
  const int before = memfdMappings();
  ASSERT_GE(before, 1);
  auto ls = orThrow(a->registerRegion(src.data(), src.size()));
  auto lb = orThrow(a->registerRegion(back.data(), back.size()));
  auto rd = orThrow(b->registerRegion(dst, n));
  ASSERT_TRUE(a->importRegion(rd.descriptor).isOk());

  std::vector<Request> batch{{Op::kWrite, ls.id, 1, 1, rd.id, 5, n - 5, 0},
                             {Op::kRead, lb.id, 0, 1, rd.id, 5, n - 5, 0}};
  ASSERT_TRUE(a->wait(orThrow(a->submit(batch)), 10).isOk());
  EXPECT_EQ(0, std::memcmp(dst + 5, src.data() + 1, n - 5));
  EXPECT_EQ(0, std::memcmp(back.data(), src.data() + 1, n - 5));
  EXPECT_EQ(0, dst[-1]);
  EXPECT_EQ(0, dst[4]);
  EXPECT_EQ(before + 1, memfdMappings());  // mapped once, for every slice

  // The table's checks hold on this path too, and leave the bytes alone.
  std::vector<uint8_t> snapshot(dst, dst + n);
  EXPECT_EQ(Code::kOutOfRange, runOne(*a, {Op::kWrite, ls.id, 0, 1, rd.id, n - 10, 11, 0}).code());
  RemoteRegion forged = rd.descriptor;
  forged.key ^= 1;
  ASSERT_TRUE(a->importRegion(forged).isOk());
  EXPECT_EQ(Code::kPermissionDenied, runOne(*a, {Op::kWrite, ls.id, 0, 1, rd.id, 0, 16, 0}).code());
  ASSERT_TRUE(a->importRegion(rd.descriptor).isOk());
  EXPECT_EQ(0, std::memcmp(snapshot.data(), dst, n));

  // Deregistered: the peer's mapping goes away without further requests, and
  // a stale request is refused.
  ASSERT_TRUE(b->deregisterRegion(rd.id).isOk());
  EXPECT_TRUE(waitFor([&] { return memfdMappings() == before; }, 5)) << memfdMappings();
  EXPECT_EQ(Code::kNotFound, runOne(*a, {Op::kWrite, ls.id, 0, 1, rd.id, 0, 16, 0}).code());
  EXPECT_EQ(0, std::memcmp(snapshot.data(), dst, n));
  // The memory outlives the transports that handed it out.
  a.reset();
  b.reset();
  dst[0] = 1;
  mem.reset();
  EXPECT_EQ(before - 1, memfdMappings());
}

TEST(Shm, AllocateHostWithoutRegistrationIsPlainMemory) {
  MemoryStore store;
  auto [a, b] = makePair(store, "auto");
  auto m = orThrow(a->allocateHost(0));
  EXPECT_NE(nullptr, m.data());
  EXPECT_EQ(0u, m.size());
  auto big = orThrow(a->allocateHost(3 << 20));
  std::memset(big.data(), 7, big.size());
  HostMemory moved = std::move(big);
  EXPECT_EQ(nullptr, big.data());
  EXPECT_EQ(7, static_cast<char*>(moved.data())[(3 << 20) - 1]);
  TransportConfig c = config(store, 0, "mmap");
  EXPECT_EQ(Code::kInvalidArgument, createTransport(c).status().code());
}

TEST(Shm, ControlChannelOrderedPerTag) {
  MemoryStore store;
  auto [a, b] = makePair(store, "auto");
  for (uint8_t i = 0; i < 50; ++i) {
    std::vector<uint8_t> m(i, i);
    ASSERT_TRUE(a->send(1, i % 2, m).isOk());
  }
  for (uint8_t i = 1; i < 50; i += 2) EXPECT_EQ(std::vector<uint8_t>(i, i), *b->recv(0, 1, 5));
  for (uint8_t i = 0; i < 50; i += 2) EXPECT_EQ(std::vector<uint8_t>(i, i), *b->recv(0, 0, 5));
  EXPECT_EQ(Code::kTimeout, b->recv(0, 0, 0.05).status().code());
  // The peer closes: recv reports it instead of waiting out the timeout.
  a.reset();
  Stopwatch sw;
  EXPECT_EQ(Code::kUnavailable, b->recv(0, 0, 30).status().code());
  EXPECT_LT(sw.seconds(), 5);
}

TEST(Shm, ManyConcurrentBatches) {
  MemoryStore store;
  auto [a, b] = makePair(store, "auto");
  const size_t n = 64, each = 70001;
  auto src = pattern(n * each, 9);
  std::vector<uint8_t> dst(src.size(), 0);
  auto ls = orThrow(a->registerRegion(src.data(), src.size()));
  auto rd = orThrow(b->registerRegion(dst.data(), dst.size()));
  ASSERT_TRUE(a->importRegion(rd.descriptor).isOk());
  std::vector<BatchId> ids;
  for (size_t i = 0; i < n; ++i) {
    Request r{Op::kWrite, ls.id, i * each, 1, rd.id, i * each, each, 0};
    ids.push_back(orThrow(a->submit(std::span<const Request>(&r, 1))));
  }
  for (BatchId id : ids) EXPECT_TRUE(a->wait(id, 10).isOk());
  EXPECT_EQ(src, dst);
}

TEST(Shm, CleanShutdownWithRequestsInFlight) {
  MemoryStore store;
  auto [a, b] = makePair(store, "auto");
  std::vector<uint8_t> src(64 << 20, 1), dst(64 << 20, 0);
  auto ls = orThrow(a->registerRegion(src.data(), src.size()));
  auto rd = orThrow(b->registerRegion(dst.data(), dst.size()));
  ASSERT_TRUE(a->importRegion(rd.descriptor).isOk());
  std::vector<Request> reqs(16, Request{Op::kWrite, ls.id, 0, 1, rd.id, 0, src.size(), 0});
  ASSERT_TRUE(a->submit(reqs).isOk());
  Stopwatch sw;
  a.reset();  // must not hang or touch freed state
  b.reset();
  EXPECT_LT(sw.seconds(), 10);
}

// Rank 1 runs in a child process; it is killed while rank 0 writes to it.
// Its region is plain memory (process_vm path) or from allocateHost() (the
// parent maps the child's memfd and copies with memcpy).
class ShmPeerProcess : public ::testing::TestWithParam<bool> {};

TEST_P(ShmPeerProcess, CopiesAndPeerDeathGivesBoundedError) {
  if (tide::testing::kThreadSanitizer) GTEST_SKIP() << tide::testing::kTsanForkReason;
  const bool memfd = GetParam();
  auto server = orThrow(exec::TcpStore::host("127.0.0.1", 0, "t0k3n"));
  const int port = server->port();
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int rc = 1;
    {
      auto st = exec::TcpStore::connect("127.0.0.1", port, "t0k3n", 10);
      if (st.isOk()) {
        auto t = createTransport(config(**st, 1, "auto"));
        const size_t n = 64 << 20;
        std::vector<uint8_t> vec(memfd ? 0 : n, 0);
        HostMemory mem;
        void* dst = vec.data();
        if (t.isOk() && memfd) {
          auto m = (*t)->allocateHost(n);
          if (m.isOk()) mem = std::move(m).value();
          dst = mem.data();
        }
        if (t.isOk() && dst != nullptr) {
          auto rd = (*t)->registerRegion(dst, n);
          if (rd.isOk() && (*st)->set("dst", rd->descriptor.serialize()).isOk()) rc = 0;
          ::pause();  // until killed
        }
      }
    }
    ::_exit(rc);
  }
  const int before = memfdMappings();
  auto a = orThrow(createTransport(config(*server, 0, "auto")));
  auto desc = orThrow(RemoteRegion::deserialize(orThrow(server->get("dst", 10))));
  ASSERT_TRUE(a->importRegion(desc).isOk());
  EXPECT_NE(desc.base, 0u);
  auto src = pattern(desc.size, 5);
  std::vector<uint8_t> back(desc.size, 0);
  auto ls = orThrow(a->registerRegion(src.data(), src.size()));
  auto lb = orThrow(a->registerRegion(back.data(), back.size()));
  Request r{Op::kWrite, ls.id, 0, 1, desc.id, 0, src.size(), 0};
  std::vector<Request> roundTrip{r, {Op::kRead, lb.id, 0, 1, desc.id, 0, back.size(), 0}};
  EXPECT_TRUE(a->wait(orThrow(a->submit(roundTrip)), 30).isOk());  // cross-process copies work
  EXPECT_EQ(src, back);
  EXPECT_EQ(before + (memfd ? 1 : 0), memfdMappings());

  std::vector<Request> many(32, r);
  auto id = orThrow(a->submit(many));
  Stopwatch sw;
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  Status s = a->wait(id, 30);
  // The batch may have finished before the kill landed; the next one must fail.
  if (s.isOk()) s = runOne(*a, r);
  EXPECT_EQ(Code::kUnavailable, s.code()) << s.toString();
  EXPECT_LT(sw.seconds(), 10);
  EXPECT_EQ(Code::kUnavailable, a->recv(1, 0, 30).status().code());
  // The dead peer's memory is unmapped here too.
  EXPECT_TRUE(waitFor([&] { return memfdMappings() == before; }, 5)) << memfdMappings();
}

INSTANTIATE_TEST_SUITE_P(Shm, ShmPeerProcess, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Memfd" : "PlainMemory"; });

TEST(Shm, RejectsBadConfig) {
  MemoryStore store;
  TransportConfig c = config(store, 0, "auto");
  c.streams = 0;
  EXPECT_EQ(Code::kInvalidArgument, createTransport(c).status().code());
  c = config(store, 0, "auto");
  c.worldSize = 2;
  c.connectTimeoutSeconds = 0.2;  // rank 1 never shows up
  Stopwatch sw;
  EXPECT_EQ(Code::kTimeout, createTransport(c).status().code());
  EXPECT_LT(sw.seconds(), 5);
}

}  // namespace
}  // namespace tide::transport
