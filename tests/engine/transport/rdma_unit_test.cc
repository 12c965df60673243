// rdma backend pieces that need no RDMA device: error messages when a device
// is missing, option parsing, descriptors, host buffers, device memory errors.

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "engine/core/clock.h"
#include "engine/core/kv_store.h"
#include "engine/transport/rdma/device.h"
#include "engine/transport/rdma/device_memory.h"
#include "engine/transport/rdma/huge_pages.h"
#include "engine/transport/rdma/rdma_transport_impl.h"
#include "engine/transport/rdma/region_registry.h"
#include "engine/transport/registry.h"

namespace tide::transport::rdma {
namespace {

TEST(RdmaUnit, MissingDeviceIsNotFoundAndNamesIt) {
  auto d = Device::open("tide_no_such_dev9", DeviceOptions{});
  ASSERT_FALSE(d.isOk());
  EXPECT_EQ(d.status().code(), Code::kNotFound);
  EXPECT_NE(d.status().message().find("'tide_no_such_dev9' not found"), std::string::npos)
      << d.status().toString();
  const std::string want = listDevices().empty() ? kNoDeviceHint : "have: ";
  EXPECT_NE(d.status().message().find(want), std::string::npos) << d.status().toString();
}

TEST(RdmaUnit, CreateThroughRegistryReportsMissingDevice) {
  MemoryStore store;
  TransportConfig c;
  c.backend = "rdma";
  c.store = &store;
  c.devices = {"tide_no_such_dev9"};
  auto t = createTransport(c);
  ASSERT_FALSE(t.isOk());
  EXPECT_EQ(t.status().code(), Code::kNotFound) << t.status().toString();
}

TEST(RdmaUnit, DescriptorWithRkeysRoundTrips) {
  RemoteRegion r;
  r.rank = 3;
  r.id = 17;
  r.size = 1ull << 33;
  r.base = 0x7f0012345000ull;
  r.key = 0xdeadbeefcafef00dull;
  r.rkeys = {0x1234, 0xabcdef01};
  auto back = RemoteRegion::deserialize(r.serialize());
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_EQ(*back, r);
  std::string cut = r.serialize();
  cut.pop_back();
  EXPECT_EQ(RemoteRegion::deserialize(cut).status().code(), Code::kInvalidArgument);
}

TEST(RdmaUnit, OptionsParseAndRejectBadValues) {
  TransportConfig c;
  c.options = {{"poll", "event"}, {"connect", "cm"}, {"sq_depth", "256"}, {"gid_index", "3"}};
  auto o = parseRdmaOptions(c);
  ASSERT_TRUE(o.isOk()) << o.status().toString();
  EXPECT_EQ(o->poll, PollMode::kEvent);
  EXPECT_TRUE(o->useCm);
  EXPECT_EQ(o->qp.sqDepth, 256u);
  EXPECT_EQ(o->device.gidIndex, 3);
  for (auto [k, v] : std::vector<std::pair<std::string, std::string>>{{"poll", "spin"},
                                                                      {"connect", "tcp"},
                                                                      {"sq_depth", "0"},
                                                                      {"retry_cnt", "9"},
                                                                      {"port", "x"},
                                                                      {"slice_min", "12abc"}}) {
    TransportConfig bad;
    bad.options = {{k, v}};
    auto r = parseRdmaOptions(bad);
    EXPECT_FALSE(r.isOk()) << k << "=" << v;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    EXPECT_NE(r.status().message().find(k), std::string::npos) << r.status().toString();
  }
}

TEST(RdmaUnit, EnvironmentOptionsFillWhatTheConfigLeavesOut) {
  ::setenv("TIDE_RDMA_OPTIONS", "poll=event,sq_depth=16", 1);
  TransportConfig c;
  c.options = {{"sq_depth", "64"}};
  auto o = parseRdmaOptions(c);
  ASSERT_TRUE(o.isOk()) << o.status().toString();
  EXPECT_EQ(o->poll, PollMode::kEvent);
  EXPECT_EQ(o->qp.sqDepth, 64u);  // the config wins
  for (const char* bad : {"sq_depth", "pol=event", "sq_depth=0"}) {
    ::setenv("TIDE_RDMA_OPTIONS", bad, 1);
    auto r = parseRdmaOptions(TransportConfig{});
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find(std::string(bad).substr(0, 3)), std::string::npos)
        << r.status().toString();
  }
  ::unsetenv("TIDE_RDMA_OPTIONS");
}

TEST(RdmaUnit, HostBufferHugeOrSaysWhyNot) {
  auto b = allocateHostBuffer(3 << 20, /*wantHuge=*/true);
  ASSERT_TRUE(b.isOk()) << b.status().toString();
  EXPECT_GE(b->size(), 3u << 20);
  EXPECT_EQ(b->size() % (2u << 20), 0u);
  if (!b->hugePages) {
    EXPECT_FALSE(b->fallbackReason.empty());
  }
  std::memset(b->data(), 0x5a, b->size());
  EXPECT_EQ(static_cast<uint8_t*>(b->data())[b->size() - 1], 0x5a);
  auto plain = allocateHostBuffer(4096, false);
  ASSERT_TRUE(plain.isOk());
  EXPECT_FALSE(plain->hugePages);
  EXPECT_EQ(allocateHostBuffer(0, true).status().code(), Code::kInvalidArgument);
}

TEST(RdmaUnit, DeviceMemoryRegistrationFailsClearlyOnHostMemory) {
  std::vector<uint8_t> host(4096);
  auto mr = registerDeviceMemory(nullptr, host.data(), host.size(), 0);
  ASSERT_FALSE(mr.isOk());
  if (!deviceMemorySupported()) {
    EXPECT_EQ(mr.status().code(), Code::kUnimplemented);
  } else {
    EXPECT_TRUE(mr.status().code() == Code::kUnavailable ||
                mr.status().code() == Code::kInvalidArgument)
        << mr.status().toString();
  }
}

// The checks an initiator makes before posting (region_registry.h).
TEST(RdmaUnit, RegistryVerifiesDescriptorsAgainstWhatTheOwnerPublished) {
  MemoryStore store;
  RegionRegistry owner(store, "rdma/", 1), initiator(store, "rdma/", 0);
  RemoteRegion d;
  d.rank = 1;
  d.id = 4;
  d.size = 4096;
  d.base = 0x10000;
  d.key = 0x1234567890abcdefull;
  d.rkeys = {77, 88};
  ASSERT_TRUE(owner.publish(d).isOk());
  auto ok = initiator.verify(d, 1);
  ASSERT_TRUE(ok.isOk()) << ok.status().toString();
  EXPECT_TRUE(ok->status.isOk()) << ok->status.toString();
  EXPECT_EQ(ok->publishedSize, 4096u);
  EXPECT_EQ(ok->epoch, 0);

  RemoteRegion bigger = d;
  bigger.size = 1 << 20;
  auto b = initiator.verify(bigger, 1);
  ASSERT_TRUE(b.isOk());
  EXPECT_TRUE(b->status.isOk());
  EXPECT_EQ(b->publishedSize, 4096u) << "bounded by the published size";

  RemoteRegion wrongKey = d;
  wrongKey.key ^= 1;
  RemoteRegion wrongRkey = d;
  wrongRkey.rkeys[1] ^= 1;
  RemoteRegion wrongBase = d;
  wrongBase.base += 64;
  for (const RemoteRegion& bad : {wrongKey, wrongRkey, wrongBase}) {
    auto v = initiator.verify(bad, 1);
    ASSERT_TRUE(v.isOk());
    EXPECT_EQ(v->status.code(), Code::kPermissionDenied) << v->status.toString();
  }
  RemoteRegion unknown = d;
  unknown.id = 5;
  Stopwatch sw;
  auto u = initiator.verify(unknown, 5);
  ASSERT_TRUE(u.isOk());
  EXPECT_EQ(u->status.code(), Code::kNotFound) << u->status.toString();
  EXPECT_LT(sw.seconds(), 1.0) << "an unknown region does not wait for the store timeout";

  // Deregistration: the region is dead and the owner's epoch moves.
  ASSERT_TRUE(owner.retract(d.id).isOk());
  EXPECT_EQ(*initiator.epoch(1), 1);
  EXPECT_FALSE(*initiator.live(1, d.id));
  auto dead = initiator.verify(d, 1);
  ASSERT_TRUE(dead.isOk());
  EXPECT_EQ(dead->status.code(), Code::kNotFound);
  EXPECT_EQ(dead->epoch, 1);

  // An owner that shut down took its regions along: a lost peer, not a bad
  // descriptor, so a run names the cause that made it leave.
  ASSERT_TRUE(owner.markGone().isOk());
  auto left = initiator.verify(d, 1);
  ASSERT_TRUE(left.isOk());
  EXPECT_EQ(left->status.code(), Code::kUnavailable) << left->status.toString();
  EXPECT_NE(left->status.message().find("rank 1 has shut down"), std::string::npos)
      << left->status.toString();
}

TEST(RdmaUnit, RegistryHeartbeatAndGone) {
  MemoryStore store;
  RegionRegistry a(store, "x/", 0), b(store, "x/", 1);
  EXPECT_EQ(*b.beats(0), 0);
  ASSERT_TRUE(a.beat().isOk());
  ASSERT_TRUE(a.beat().isOk());
  EXPECT_EQ(*b.beats(0), 2);
  EXPECT_FALSE(*b.gone(0));
  ASSERT_TRUE(a.markGone().isOk());
  EXPECT_TRUE(*b.gone(0));
  EXPECT_FALSE(*a.gone(1));
}

}  // namespace
}  // namespace tide::transport::rdma
