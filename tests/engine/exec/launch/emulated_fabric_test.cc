// The emulated cluster's NICs and leaves (needs root; skipped otherwise): a
// connection bound to a NIC's address leaves and arrives through that NIC's
// links only, and a transfer between two leaves is held to the leaf's
// uplink rate, which an oversubscribed leaf makes lower than a node's.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/core/fd.h"
#include "engine/core/socket_io.h"
#include "engine/exec/launch/emulated_cluster.h"
#include "engine/exec/launch/net_namespace.h"
#include "gtest/gtest.h"

namespace tide::exec {
namespace {

// Bytes a device of the calling thread's namespace has sent (tx) or
// received: /proc/thread-self/net/dev is the thread's namespace's view.
uint64_t deviceBytes(const std::string& dev, bool tx) {
  std::ifstream in("/proc/thread-self/net/dev");
  std::string line;
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    name.erase(0, name.find_first_not_of(' '));
    if (name != dev) continue;
    std::istringstream fields(line.substr(colon + 1));
    std::vector<uint64_t> v;
    uint64_t x = 0;
    while (fields >> x) v.push_back(x);
    return v.size() > 8 ? (tx ? v[8] : v[0]) : 0;
  }
  ADD_FAILURE() << "no device " << dev << " in this namespace";
  return 0;
}

uint64_t bytesIn(const std::string& ns, const std::string& dev, bool tx) {
  auto scope = NamespaceScope::enter(ns);
  EXPECT_TRUE(scope.isOk()) << scope.status().message();
  return scope.isOk() ? deviceBytes(dev, tx) : 0;
}

// A listening socket on addr, made inside `ns` (a socket keeps the
// namespace it was made in).
UniqueFd listenIn(const std::string& ns, const std::string& addr, uint16_t& port) {
  auto scope = NamespaceScope::enter(ns);
  EXPECT_TRUE(scope.isOk()) << scope.status().message();
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  ::inet_pton(AF_INET, addr.c_str(), &a.sin_addr);
  EXPECT_EQ(0, ::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a)) << addr;
  EXPECT_EQ(0, ::listen(fd.get(), 4));
  socklen_t len = sizeof a;
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len);
  port = ntohs(a.sin_port);
  return fd;
}

// Sends `bytes` from `from` (bound, inside fromNs) to a listener on `to`
// inside toNs; returns the seconds from the first byte sent to the last
// byte received.
double transfer(const std::string& fromNs, const std::string& from, const std::string& toNs,
                const std::string& to, size_t bytes) {
  uint16_t port = 0;
  UniqueFd listener = listenIn(toNs, to, port);
  UniqueFd out;
  {
    auto scope = NamespaceScope::enter(fromNs);
    EXPECT_TRUE(scope.isOk());
    auto fd = connectTcp(to, port, Deadline::after(30), from);
    EXPECT_TRUE(fd.isOk()) << fd.status().message();
    if (!fd.isOk()) return 0;
    out = std::move(*fd);
  }
  UniqueFd in(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
  EXPECT_TRUE(in.valid());
  size_t got = 0;
  std::thread reader([&] {
    std::vector<char> buf(1 << 16);
    for (;;) {
      ssize_t n = ::read(in.get(), buf.data(), buf.size());
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
  });
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<char> data(bytes, 'x');
  size_t sent = 0;
  while (sent < bytes) {
    ssize_t n = ::write(out.get(), data.data() + sent, bytes - sent);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  ::shutdown(out.get(), SHUT_WR);
  reader.join();
  EXPECT_EQ(bytes, got);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(EmulatedFabric, EachRankUsesItsOwnNicsLinks) {
  if (std::string why = netAdminMissing(); !why.empty()) GTEST_SKIP() << "needs root: " << why;
  auto c = EmulatedCluster::create(2, 100e6 / 8, EmulatedFabric{2, 0, 0});
  ASSERT_TRUE(c.isOk()) << c.status().message();
  const std::string p = (*c)->prefix();
  const std::string n0 = EmulatedCluster::nodeNamespace(p, 0),
                    n1 = EmulatedCluster::nodeNamespace(p, 1);
  const uint64_t tx0 = bytesIn(n0, (*c)->nicDevice(0, 0), true),
                 tx1 = bytesIn(n0, (*c)->nicDevice(0, 1), true),
                 rx0 = bytesIn(n1, (*c)->nicDevice(1, 0), false),
                 rx1 = bytesIn(n1, (*c)->nicDevice(1, 1), false);
  constexpr size_t kBytes = 1 << 20;
  transfer(n0, EmulatedCluster::nicAddress(0, 1, 2), n1, EmulatedCluster::nicAddress(1, 1, 2),
           kBytes);
  // NIC 1 of node 0 sent it and NIC 1 of node 1 received it; the NIC 0
  // links carried at most some ARP and ACKs.
  EXPECT_GE(bytesIn(n0, (*c)->nicDevice(0, 1), true) - tx1, kBytes);
  EXPECT_GE(bytesIn(n1, (*c)->nicDevice(1, 1), false) - rx1, kBytes);
  EXPECT_LT(bytesIn(n0, (*c)->nicDevice(0, 0), true) - tx0, 64u << 10);
  EXPECT_LT(bytesIn(n1, (*c)->nicDevice(1, 0), false) - rx0, 64u << 10);
}

TEST(EmulatedFabric, AnOversubscribedLeafHoldsTrafficToItsUplink) {
  if (std::string why = netAdminMissing(); !why.empty()) GTEST_SKIP() << "needs root: " << why;
  // 100 Mbit/s per node, 2 nodes per leaf, oversubscribed 4:1: the uplink
  // carries 50 Mbit/s, half a node's link.
  constexpr double kNode = 100e6 / 8, kUplink = 2 * kNode / 4;
  auto c = EmulatedCluster::create(4, kNode, EmulatedFabric{1, 2, kUplink});
  ASSERT_TRUE(c.isOk()) << c.status().message();
  const std::string p = (*c)->prefix();
  constexpr size_t kBytes = 2 << 20;
  const uint64_t up0 = bytesIn((*c)->hubNamespace(), p + "u0", true);
  // Node 0 (leaf 0) to node 2 (leaf 1): through leaf 0's uplink, which a
  // shaper holds to its rate: the transfer cannot be faster (on a loaded
  // host it can only be slower), and at a node's rate it would take half.
  const double s =
      transfer(EmulatedCluster::nodeNamespace(p, 0), EmulatedCluster::nodeAddress(0),
               EmulatedCluster::nodeNamespace(p, 2), EmulatedCluster::nodeAddress(2), kBytes);
  EXPECT_GE(s, 0.9 * kBytes / kUplink) << "faster than the leaf's uplink";
  EXPECT_GE(bytesIn((*c)->hubNamespace(), p + "u0", true) - up0, kBytes);
}

TEST(EmulatedFabric, RefusesMoreNicsThanAddresses) {
  auto c = EmulatedCluster::create(200, 1e6, EmulatedFabric{2, 0, 0});
  ASSERT_FALSE(c.isOk());
  EXPECT_NE(std::string::npos, c.status().message().find("at most 245 NICs"))
      << c.status().message();
}

}  // namespace
}  // namespace tide::exec
