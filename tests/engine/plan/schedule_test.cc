#include "engine/plan/schedule.h"

#include <gtest/gtest.h>

#include <set>

#include "tests/engine/plan/plan_boxes.h"

namespace tide::plan {
namespace {

using workloads::DType;

Move move(uint32_t src, uint32_t dst, RegionBox b, Space ss, Space ds, MoveKind k, uint32_t stage,
          uint32_t bucket = 0, uint32_t tensor = 0) {
  Move m;
  m.src = src;
  m.dst = dst;
  m.tensor = tensor;
  m.box = b;
  m.srcSpace = ss;
  m.dstSpace = ds;
  m.kind = k;
  m.stage = stage;
  m.bucket = bucket;
  return m;
}

// p2p-like: two trainers convert their halves of an 8x4 tensor into a
// staging replica, then write them to two inference ranks; bucket 1 is a
// second tensor that only trainer 1 holds.
TransferPlan p2pPlan() {
  TransferPlan p;
  p.strategy = "test";
  p.ranks = {{0, Role::kTrainer, 0, 0},
             {1, Role::kTrainer, 0, 1},
             {2, Role::kInference, 1, 0},
             {3, Role::kInference, 1, 1}};
  p.tensors = {{0, "w", {8, 4}, DType::kBF16, DType::kBF16, 0},
               {1, "v", {4, 4}, DType::kBF16, DType::kBF16, 0}};
  p.holdings = {{0, Space::kTrain, 0, rows(0, 4, 4), DType::kBF16},
                {1, Space::kTrain, 0, rows(4, 8, 4), DType::kBF16},
                {1, Space::kTrain, 1, rows(0, 4, 4), DType::kBF16},
                {0, Space::kStaging, 0, rows(0, 4, 4), DType::kBF16},
                {1, Space::kStaging, 0, rows(4, 8, 4), DType::kBF16},
                {1, Space::kStaging, 1, rows(0, 4, 4), DType::kBF16},
                {2, Space::kInfer, 0, rows(0, 6, 4), DType::kBF16},
                {3, Space::kInfer, 0, rows(6, 8, 4), DType::kBF16},
                {2, Space::kInfer, 1, rows(0, 4, 4), DType::kBF16}};
  const uint32_t conv = p.addStage("convert");
  const uint32_t write = p.addStage("write", {Dependency{conv, true}});
  p.addMove(move(0, 0, rows(0, 4, 4), Space::kTrain, Space::kStaging, MoveKind::kConvert, conv));
  p.addMove(move(1, 1, rows(4, 8, 4), Space::kTrain, Space::kStaging, MoveKind::kConvert, conv));
  p.addMove(
      move(1, 1, rows(0, 4, 4), Space::kTrain, Space::kStaging, MoveKind::kConvert, conv, 1, 1));
  p.addMove(move(0, 2, rows(0, 4, 4), Space::kStaging, Space::kInfer, MoveKind::kWrite, write));
  p.addMove(move(1, 2, rows(4, 6, 4), Space::kStaging, Space::kInfer, MoveKind::kWrite, write));
  p.addMove(move(1, 3, rows(6, 8, 4), Space::kStaging, Space::kInfer, MoveKind::kWrite, write));
  p.addMove(
      move(1, 2, rows(0, 4, 4), Space::kStaging, Space::kInfer, MoveKind::kWrite, write, 1, 1));
  EXPECT_TRUE(p.validate().isOk()) << p.validate().toString();
  return p;
}

// A chain: trainer 0 packs an 8x4 tensor into bucket 0 and broadcasts it
// along 1 -> 2 -> 3, each of which keeps the whole tensor.
TransferPlan chainPlan(uint64_t chunk) {
  TransferPlan p;
  p.strategy = "test";
  p.params.options.chunkBytes = chunk;
  p.ranks = {{0, Role::kTrainer, 0, 0},
             {1, Role::kInference, 1, 0},
             {2, Role::kInference, 2, 0},
             {3, Role::kInference, 3, 0}};
  p.tensors = {{0, "w", {8, 4}, DType::kBF16, DType::kBF16, 0}};
  p.holdings = {{0, Space::kTrain, 0, rows(0, 8, 4), DType::kBF16}};
  for (uint32_t r = 1; r <= 3; ++r) p.holdings.push_back({r, Space::kInfer, 0, rows(0, 8, 4)});
  Bucket b;
  b.owner = 0;
  b.stage = 1;
  b.entries.push_back(BucketEntry{0, rows(0, 8, 4), DType::kBF16});
  b.bytes = 64;
  p.buckets.push_back(b);
  const uint32_t gather = p.addStage("gather");
  const uint32_t bcast = p.addStage("broadcast", {Dependency{gather, true}});
  const uint32_t keep = p.addStage("keep", {Dependency{bcast, true}});
  p.addMove(move(0, 0, rows(0, 8, 4), Space::kTrain, Space::kBucket, MoveKind::kConvert, gather));
  for (uint32_t r = 0; r < 3; ++r) {
    Move h = move(r, r + 1, {}, Space::kBucket, Space::kBucket, MoveKind::kBroadcastHop, bcast);
    h.tensor = kWholeBucket;
    p.addMove(h);
  }
  for (uint32_t r = 1; r <= 3; ++r)
    p.addMove(move(r, r, rows(0, 8, 4), Space::kBucket, Space::kInfer, MoveKind::kConvert, keep));
  EXPECT_TRUE(p.validate().isOk()) << p.validate().toString();
  return p;
}

TEST(Schedule, GroupsMovesIntoUnitsOncePerRankStageBucketAndPeer) {
  const TransferPlan p = p2pPlan();
  auto s = Schedule::build(p);
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  // Units: conv(0,b0), conv(1,b0), conv(1,b1), write 0->2, write 1->2 b0, 1->3, 1->2 b1.
  ASSERT_EQ(s->units.size(), 7u);
  std::multiset<uint32_t> seen(s->moves.begin(), s->moves.end());
  ASSERT_EQ(seen.size(), p.moves.size());
  for (uint32_t i = 0; i < p.moves.size(); ++i) EXPECT_EQ(seen.count(i), 1u) << "move " << i;
  uint64_t bytes = 0;
  for (const Unit& u : s->units) {
    for (uint32_t i = u.moveBegin; i < u.moveEnd; ++i) {
      const Move& m = p.moves[s->moves[i]];
      EXPECT_EQ(m.src, u.rank);
      EXPECT_EQ(m.dst, u.peer);
      EXPECT_EQ(m.stage, u.stage);
      EXPECT_EQ(m.bucket, u.bucket);
    }
    bytes += u.bytes;
  }
  EXPECT_EQ(bytes, p.summarize().totalBytes);
  // Arrivals at each rank are numbered 0.. in plan order.
  ASSERT_EQ(s->arrivals[2].size(), 3u);
  for (uint32_t k = 0; k < 3; ++k) EXPECT_EQ(s->units[s->arrivals[2][k].unit].slot, k);
  EXPECT_EQ(s->arrivals[3].size(), 1u);
}

TEST(Schedule, AWriteWaitsForItsOwnRanksConversionOfThatBucketOnly) {
  const TransferPlan p = p2pPlan();
  auto s = Schedule::build(p);
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  for (const Unit& u : s->units) {
    if (u.kind != UnitKind::kWrite) {
      EXPECT_EQ(u.depBegin, u.depEnd) << "the conversions wait for nothing";
      continue;
    }
    ASSERT_EQ(u.depEnd - u.depBegin, 1u);
    const UnitDep& d = s->deps[u.depBegin];
    ASSERT_EQ(d.kind, DepKind::kGate);
    const Gate& g = s->gates[d.id];
    EXPECT_EQ(g.rank, u.rank);
    EXPECT_EQ(g.stage, 0u);
    EXPECT_EQ(g.bucket, u.bucket);
    EXPECT_EQ(g.pieces, 1u) << "one conversion unit per (rank, bucket)";
  }
  // Each gate is counted to by exactly its pieces.
  std::vector<uint32_t> counted(s->gates.size(), 0);
  for (const Unit& u : s->units)
    for (uint32_t g : u.gates)
      if (g != kNoGate) counted[g] += u.pieces;
  for (size_t g = 0; g < s->gates.size(); ++g) EXPECT_EQ(counted[g], s->gates[g].pieces);
}

TEST(Schedule, AHopIsChunkedAndEachPieceWaitsForTheSamePieceUpstream) {
  const TransferPlan p = chainPlan(24);  // 64 B in pieces of 24, 24, 16
  auto s = Schedule::build(p);
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  std::vector<uint32_t> hops;
  for (uint32_t id = 0; id < s->units.size(); ++id)
    if (s->units[id].kind == UnitKind::kHop) hops.push_back(id);
  ASSERT_EQ(hops.size(), 3u);
  for (size_t i = 0; i < hops.size(); ++i) {
    const Unit& u = s->units[hops[i]];
    EXPECT_EQ(u.pieces, 3u);
    EXPECT_EQ(u.bytesOfPiece(0) + u.bytesOfPiece(1) + u.bytesOfPiece(2), 64u);
    EXPECT_EQ(u.bytesOfPiece(2), 16u);
    EXPECT_EQ(s->arrivals[u.peer].size(), 3u);
    bool same = false, gate = false;
    for (auto* d = s->depsBegin(u); d != s->depsEnd(u); ++d) {
      if (d->kind == DepKind::kSamePiece) {
        EXPECT_EQ(d->id, hops[i - 1]) << "the hop into its sender";
        same = true;
      } else {
        gate = true;
        EXPECT_EQ(s->gates[d->id].rank, 0u) << "only the head waits for a gather";
      }
    }
    EXPECT_EQ(same, i > 0);
    EXPECT_EQ(gate, i == 0);
  }
  EXPECT_STREQ(s->units[hops[0]].name(), "broadcast_hop");
  // A keep waits for every piece that lands at its rank.
  for (const Unit& u : s->units) {
    if (u.stage != 2) continue;
    ASSERT_EQ(u.depEnd - u.depBegin, 1u);
    EXPECT_EQ(s->gates[s->deps[u.depBegin].id].pieces, 3u);
    EXPECT_STREQ(u.name(), "copy");
  }
}

TEST(Schedule, RefusesAHopThatRepeatsItsBucketBetweenTwoRanks) {
  TransferPlan p = chainPlan(16);
  p.moves.push_back(p.moves[1]);  // hop 0 -> 1 again
  auto s = Schedule::build(p);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.status().message().find("broadcast hop of bucket 0"), std::string::npos)
      << s.status().toString();
}

}  // namespace
}  // namespace tide::plan
