#include "engine/transport/registration.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "tests/fakes/fake_transport.h"

namespace tide::transport {
namespace {

// Rank 0 writes 8 bytes into rank 1's region `remote`; the batch's status.
Status writeInto(Transport& t0, const Registration& src, const RemoteRegion& remote) {
  Request q;
  q.op = Op::kWrite;
  q.localRegion = src.id();
  q.peer = 1;
  q.remoteRegion = remote.id;
  q.length = 8;
  TIDE_ASSIGN_OR_RETURN(BatchId b, t0.submit(std::span(&q, 1)));
  return t0.wait(b, 10);
}

TEST(Registration, DeregistersWhenItGoes) {
  auto world = fakes::createFakeWorld(2);
  auto src = Registration::allocate(*world[0], 64);
  ASSERT_TRUE(src.isOk()) << src.status().toString();
  std::memset(src->data(), 0x5A, 8);
  RemoteRegion remote;
  {
    auto dst = Registration::allocate(*world[1], 64);
    ASSERT_TRUE(dst.isOk());
    EXPECT_TRUE(dst->registered());
    EXPECT_EQ(64u, dst->size());
    EXPECT_EQ(0, dst->data()[0]) << "allocate() zeroes the memory";
    remote = dst->descriptor();
    ASSERT_TRUE(world[0]->importRegion(remote).isOk());
    Registration moved = std::move(dst).value();  // the region goes with the move
    ASSERT_TRUE(writeInto(*world[0], *src, remote).isOk());
    EXPECT_EQ(0x5A, moved.data()[7]);
  }
  EXPECT_FALSE(writeInto(*world[0], *src, remote).isOk()) << "the region outlived its owner";
}

TEST(Registration, ReleaseKeepsMemoryAndId) {
  auto world = fakes::createFakeWorld(2);
  std::vector<uint8_t> mine(32, 7);
  auto src = Registration::borrow(*world[0], mine.data(), mine.size());
  ASSERT_TRUE(src.isOk());
  auto dst = Registration::allocate(*world[1], 32);
  ASSERT_TRUE(dst.isOk());
  ASSERT_TRUE(world[0]->importRegion(dst->descriptor()).isOk());
  const uint32_t id = dst->id();
  ASSERT_TRUE(dst->release().isOk());
  EXPECT_FALSE(dst->registered());
  EXPECT_EQ(id, dst->id());
  EXPECT_NE(nullptr, dst->data()) << "release() keeps owned memory";
  EXPECT_TRUE(dst->release().isOk()) << "a second release has nothing to do";
  EXPECT_FALSE(writeInto(*world[0], *src, dst->descriptor()).isOk());
  EXPECT_EQ(7, mine[0]);
}

TEST(Registration, FailedRegistrationOwnsNothing) {
  auto world = fakes::createFakeWorld(1);
  uint8_t b[8];
  auto r = Registration::borrow(*world[0], b, sizeof b, MemoryKind::kCuda);  // fake: host only
  EXPECT_FALSE(r.isOk());
  Registration empty;
  EXPECT_FALSE(empty.registered());
  EXPECT_EQ(nullptr, empty.data());
}

}  // namespace
}  // namespace tide::transport
