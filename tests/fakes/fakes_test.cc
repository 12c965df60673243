// The fakes behave: the fake transport moves bytes with a real target's
// checks, and the faulty decorator injects exactly the faults it is told.

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "engine/core/clock.h"
#include "tests/fakes/fake_transport.h"
#include "tests/fakes/faulty_transport.h"

namespace tide::transport::fakes {
namespace {

struct Fixture {
  std::vector<std::unique_ptr<Transport>> world = createFakeWorld(2);
  std::vector<uint8_t> src = std::vector<uint8_t>(4096), dst = std::vector<uint8_t>(4096);
  LocalRegion s, d;
  Fixture() {
    std::iota(src.begin(), src.end(), 0);
    s = orThrow(world[0]->registerRegion(src.data(), src.size()));
    d = orThrow(world[1]->registerRegion(dst.data(), dst.size()));
    orThrow(world[0]->importRegion(d.descriptor));
  }
  Request write(uint64_t off, uint64_t len, Op op = Op::kWrite) const {
    Request r;
    r.op = op;
    r.localRegion = s.id;
    r.localOffset = off;
    r.peer = 1;
    r.remoteRegion = d.id;
    r.remoteOffset = off;
    r.length = len;
    return r;
  }
};

Status runOn(Transport& t, std::vector<Request> reqs) {
  TIDE_ASSIGN_OR_RETURN(BatchId id, t.submit(reqs));
  return t.wait(id, 10);
}

TEST(FakeTransport, MovesBytesAndChecksAccess) {
  Fixture f;
  ASSERT_TRUE(runOn(*f.world[0], {f.write(10, 100)}).isOk());
  EXPECT_EQ(std::memcmp(f.src.data() + 10, f.dst.data() + 10, 100), 0);
  EXPECT_EQ(f.dst[9], 0);
  RemoteRegion forged = f.d.descriptor;
  forged.key++;
  forged.size = 1 << 20;
  ASSERT_TRUE(f.world[0]->importRegion(forged).isOk());
  EXPECT_EQ(runOn(*f.world[0], {f.write(0, 10)}).code(), Code::kPermissionDenied);
  EXPECT_EQ(f.world[0]->submit(std::vector<Request>{f.write(4000, 200)}).status().code(),
            Code::kOutOfRange);
}

TEST(FakeTransport, NotifiesAndCarriesControlMessages) {
  Fixture f;
  Request r = f.write(0, 8, Op::kWriteWithImm);
  r.imm = 5;
  ASSERT_TRUE(runOn(*f.world[0], {r}).isOk());
  auto n = f.world[1]->waitNotification(1);
  ASSERT_TRUE(n.isOk());
  EXPECT_EQ(n->imm, 5u);
  std::vector<uint8_t> msg = {1, 2, 3};
  ASSERT_TRUE(f.world[0]->send(1, 4, msg).isOk());
  EXPECT_EQ(f.world[1]->recv(0, 4, 1).value(), msg);
  EXPECT_EQ(f.world[1]->recv(0, 4, 0.01).status().code(), Code::kTimeout);
}

TEST(FakeTransport, GoneRankIsUnavailable) {
  Fixture f;
  f.world[1].reset();
  EXPECT_EQ(runOn(*f.world[0], {f.write(0, 10)}).code(), Code::kUnavailable);
  EXPECT_EQ(f.world[0]->recv(1, 0, 1).status().code(), Code::kUnavailable);
}

TEST(FaultyTransport, FailsTheNthRequestOnly) {
  Fixture f;
  FaultyTransport t(std::move(f.world[0]), FaultPlan{.failRequest = 2});
  EXPECT_TRUE(runOn(t, {f.write(0, 10)}).isOk());
  Status s = runOn(t, {f.write(100, 10)});
  EXPECT_EQ(s.code(), Code::kUnavailable);
  EXPECT_NE(s.message().find("injected"), std::string::npos);
  EXPECT_EQ(f.dst[100], 0) << "the failed request did not run";
  EXPECT_TRUE(runOn(t, {f.write(200, 10)}).isOk());
  EXPECT_EQ(t.requestsSeen(), 3u);
}

TEST(FaultyTransport, DropsAndCorruptsSilently) {
  Fixture f;
  FaultyTransport t(std::move(f.world[0]), FaultPlan{.dropRequest = 1, .corruptRequest = 2});
  // Corruption needs the region's address: register through the decorator.
  f.s = orThrow(t.registerRegion(f.src.data(), f.src.size()));
  EXPECT_TRUE(runOn(t, {f.write(0, 64), f.write(64, 64)}).isOk());
  EXPECT_EQ(f.dst[5], 0) << "dropped";
  int diffs = 0;
  for (int i = 64; i < 128; ++i) diffs += f.dst[i] != f.src[i];
  EXPECT_EQ(diffs, 1) << "exactly one corrupted byte";
  EXPECT_EQ(f.src[64 + 32], 64 + 32) << "the caller's source is untouched";
}

// The flipped byte is the corrupted request's alone: another batch in flight
// over the same source bytes delivers them intact (the decorator once flipped
// the caller's source until its batch was reaped), and a corrupted
// WRITE_WITH_IMM still notifies once, after its data.
TEST(FaultyTransport, CorruptsOnlyItsOwnRequest) {
  Fixture f;
  FaultyTransport t(std::move(f.world[0]), FaultPlan{.corruptRequest = 1});
  f.s = orThrow(t.registerRegion(f.src.data(), f.src.size()));
  Request a = f.write(0, 64, Op::kWriteWithImm);
  a.imm = 7;
  Request b = f.write(0, 64);
  b.remoteOffset = 1000;
  BatchId first = orThrow(t.submit(std::vector<Request>{a}));
  BatchId second = orThrow(t.submit(std::vector<Request>{b}));
  ASSERT_TRUE(t.wait(second, 10).isOk());
  ASSERT_TRUE(t.wait(first, 10).isOk());
  EXPECT_EQ(std::memcmp(f.dst.data() + 1000, f.src.data(), 64), 0) << "the other batch's bytes";
  int diffs = 0;
  for (int i = 0; i < 64; ++i) diffs += f.dst[i] != f.src[i];
  EXPECT_EQ(diffs, 1);
  EXPECT_EQ(f.dst[32], static_cast<uint8_t>(32 ^ 0xFF));
  for (int i = 0; i < 64; ++i) ASSERT_EQ(f.src[i], i) << "the caller's source at " << i;
  auto n = f.world[1]->waitNotification(1);
  ASSERT_TRUE(n.isOk()) << n.status().toString();
  EXPECT_EQ(n->imm, 7u);
  EXPECT_EQ(f.world[1]->waitNotification(0.05).status().code(), Code::kTimeout) << "one only";
}

TEST(FaultyTransport, DelaysCompletion) {
  Fixture f;
  FaultyTransport t(std::move(f.world[0]), FaultPlan{.delaySeconds = 0.2});
  auto id = t.submit(std::vector<Request>{f.write(0, 10)});
  ASSERT_TRUE(id.isOk());
  EXPECT_FALSE(t.test(*id).value());
  Stopwatch sw;
  EXPECT_TRUE(t.wait(*id, 5).isOk());
  EXPECT_GT(sw.seconds(), 0.1);
}

TEST(FaultyTransport, DiesAtTheNthRequestAndPeersSeeIt) {
  Fixture f;
  auto t = std::make_unique<FaultyTransport>(std::move(f.world[1]), FaultPlan{.dieAtRequest = 1});
  // Rank 1 dies on its first request; rank 0 then finds it gone.
  Request r;
  r.peer = 0;
  auto id = t->submit(std::vector<Request>{r});
  Status s = id.isOk() ? t->wait(*id, 1) : id.status();
  EXPECT_EQ(s.code(), Code::kUnavailable);
  EXPECT_TRUE(t->dead());
  EXPECT_EQ(runOn(*f.world[0], {f.write(0, 10)}).code(), Code::kUnavailable);
  EXPECT_EQ(t->send(0, 1, {}).code(), Code::kUnavailable);
}

}  // namespace
}  // namespace tide::transport::fakes
