// The weight store's catalog: placement on distinct nodes, manifest
// committed last, READY -> DEGRADED on a lost node -> READY after
// re-replication, LOST when no replica is left, leases holding versions
// from collection.

#include "engine/sync/store/snapshot_catalog.h"

#include <gtest/gtest.h>

#include <set>

namespace tide::sync::store {
namespace {

const std::vector<uint64_t> kBytes = {1000, 2000, 3000};
const std::vector<uint64_t> kHashes = {11, 22, 33};

void storeAll(SnapshotCatalog& c, uint64_t v) {
  const Snapshot* s = orThrow(c.snapshot(v));
  for (uint32_t f = 0; f < s->fragments.size(); ++f) {
    for (uint32_t n : s->fragments[f].nodes) orThrow(c.stored(v, f, n));
  }
}

TEST(SnapshotCatalog, ImportPlacesReplicasOnDistinctNodesAndCommitsLast) {
  SnapshotCatalog c(4, 2);
  const Snapshot* s = orThrow(c.beginImport(1, kBytes, kHashes));
  EXPECT_EQ(s->state, SnapshotState::kImporting);
  std::set<std::pair<uint32_t, uint64_t>> slots;
  for (const auto& f : s->fragments) {
    ASSERT_EQ(f.nodes.size(), 2u);
    EXPECT_NE(f.nodes[0], f.nodes[1]);
    for (size_t i = 0; i < f.nodes.size(); ++i) {
      EXPECT_TRUE(slots.insert({f.nodes[i], f.offsets[i]}).second) << "two replicas share a slot";
    }
  }
  EXPECT_EQ(c.latestReadable().status().code(), Code::kNotFound);  // not committed yet
  orThrow(c.stored(1, 0, s->fragments[0].nodes[0]));
  EXPECT_EQ(c.commit(1).code(), Code::kFailedPrecondition);  // replicas missing
  storeAll(c, 1);
  orThrow(c.commit(1));
  s = orThrow(c.snapshot(1));
  EXPECT_EQ(s->state, SnapshotState::kReady);
  EXPECT_NE(s->manifestHash, 0u);
  EXPECT_NE(s->manifest.find("version 1"), std::string::npos);
  EXPECT_EQ(orThrow(c.latestReadable()), 1u);
  EXPECT_EQ(c.beginImport(1, kBytes, kHashes).status().code(), Code::kAlreadyExists);
}

TEST(SnapshotCatalog, LostNodeDegradesThenReReplicationRestores) {
  SnapshotCatalog c(4, 2);
  const Snapshot* s = orThrow(c.beginImport(7, kBytes, kHashes));
  storeAll(c, 7);
  orThrow(c.commit(7));
  const uint32_t victim = s->fragments[2].nodes[0];
  orThrow(c.nodeLost(victim));
  EXPECT_EQ(orThrow(c.snapshot(7))->state, SnapshotState::kDegraded);
  EXPECT_EQ(orThrow(c.latestReadable()), 7u);  // still readable from the replicas
  const uint32_t src = orThrow(c.source(7, 2));
  EXPECT_NE(src, victim);
  EXPECT_TRUE(c.live(src));
  auto repairs = orThrow(c.repairs(7));
  ASSERT_FALSE(repairs.empty());
  for (const auto& r : repairs) {
    EXPECT_NE(r.to, victim);
    EXPECT_NE(r.to, r.from);
    EXPECT_TRUE(c.live(r.from));
    orThrow(c.stored(7, r.fragment, r.to));  // the copy landed
  }
  EXPECT_EQ(orThrow(c.snapshot(7))->state, SnapshotState::kReady);
  // Lose everything but one node: some fragment has no replica left.
  for (uint32_t n = 0; n < 4; ++n) {
    if (n != victim && n != src) orThrow(c.nodeLost(n));
  }
  orThrow(c.nodeLost(src));
  EXPECT_EQ(orThrow(c.snapshot(7))->state, SnapshotState::kLost);
  EXPECT_EQ(c.repairs(7).status().code(), Code::kDataLoss);
  EXPECT_EQ(c.beginImport(8, kBytes, kHashes).status().code(), Code::kUnavailable);
}

TEST(SnapshotCatalog, LeasesKeepVersionsFromCollection) {
  SnapshotCatalog c(3, 2);
  for (uint64_t v = 1; v <= 3; ++v) {
    orThrow(c.beginImport(v, kBytes, kHashes).status());
    storeAll(c, v);
    orThrow(c.commit(v));
  }
  orThrow(c.acquire(1));
  EXPECT_EQ(c.collect(), (std::vector<uint64_t>{2}));  // 1 leased, 3 newest
  EXPECT_EQ(c.snapshot(2).status().code(), Code::kNotFound);
  orThrow(c.release(1));
  EXPECT_EQ(c.release(1).code(), Code::kFailedPrecondition);
  EXPECT_EQ(c.collect(), (std::vector<uint64_t>{1}));
  EXPECT_EQ(orThrow(c.latestReadable()), 3u);
  orThrow(c.beginImport(4, kBytes, kHashes).status());
  EXPECT_EQ(c.acquire(4).code(), Code::kFailedPrecondition);  // importing
  EXPECT_TRUE(c.collect().empty());
}

TEST(SnapshotCatalog, CollectedVersionsFreeTheirSpace) {
  // Room for two versions' replicas: a third fits only once the first is collected.
  SnapshotCatalog c(2, 2, 2 * (1024 + 2048 + 3008));
  for (uint64_t v = 1; v <= 2; ++v) {
    orThrow(c.beginImport(v, kBytes, kHashes).status());
    storeAll(c, v);
    orThrow(c.commit(v));
  }
  orThrow(c.acquire(1));
  EXPECT_EQ(c.beginImport(3, kBytes, kHashes).status().code(), Code::kResourceExhausted);
  EXPECT_EQ(c.snapshot(3).status().code(), Code::kNotFound);  // nothing half placed
  orThrow(c.release(1));
  EXPECT_EQ(c.collect(), (std::vector<uint64_t>{1}));
  const Snapshot* s = orThrow(c.beginImport(3, kBytes, kHashes));
  for (const auto& f : s->fragments) {
    for (uint64_t off : f.offsets) EXPECT_LT(off + f.bytes, 2u * (1024 + 2048 + 3008) + 1);
  }
  storeAll(c, 3);
  orThrow(c.commit(3));
  EXPECT_EQ(c.collect(), (std::vector<uint64_t>{2}));
}

TEST(SnapshotCatalog, AnAbortedImportFreesItsSpaceAndCanBePlacedAgain) {
  // Room for one version: the aborted import must give all of it back.
  SnapshotCatalog c(3, 2, 1024 + 2048 + 3008);
  const Snapshot* s = orThrow(c.beginImport(1, kBytes, kHashes));
  const uint32_t lost = s->fragments[0].nodes[0];
  orThrow(c.abortImport(1));
  EXPECT_EQ(c.snapshot(1).status().code(), Code::kNotFound);
  orThrow(c.nodeLost(lost));
  s = orThrow(c.beginImport(1, kBytes, kHashes));
  for (const auto& f : s->fragments) {
    for (uint32_t n : f.nodes) EXPECT_NE(n, lost) << "placed on a lost node";
  }
  storeAll(c, 1);
  orThrow(c.commit(1));
  EXPECT_EQ(c.abortImport(1).code(), Code::kFailedPrecondition);  // committed
  EXPECT_EQ(c.abortImport(9).code(), Code::kNotFound);
}

}  // namespace
}  // namespace tide::sync::store
