#include "engine/plan/lower_bound.h"

#include <gtest/gtest.h>

namespace tide::plan {
namespace {

using workloads::DType;

workloads::ClusterSpec cluster() {
  workloads::ClusterSpec c;
  c.name = "hand";
  c.nodes = 3;
  c.gpusPerNode = 4;
  c.nicsPerNode = 2;
  c.nicBps = 10e9;
  c.nvlinkBps = 100e9;
  c.pcieD2HBps = 20e9;
  c.gpuNic = {0, 0, 1, 1};  // two GPUs share each NIC
  return c;
}

// One 1-D fp32 tensor of 1e9 elements (4e9 bytes); boxes are element ranges.
TransferPlan plan() {
  TransferPlan p;
  p.strategy = "hand";
  for (uint32_t r = 0; r < 12; ++r) {
    p.ranks.push_back({r, r < 8 ? Role::kTrainer : Role::kInference, r / 4, r % 4});
  }
  p.tensors = {{0, "t", {1000000000}, DType::kFP32, DType::kFP32, 0}};
  p.addStage("s");
  return p;
}

Move move(uint32_t src, uint32_t dst, uint64_t lo, uint64_t hi) {
  Move m;
  m.src = src;
  m.dst = dst;
  m.box.ndim = 1;
  m.box.lo[0] = lo;
  m.box.hi[0] = hi;
  m.srcDtype = m.dstDtype = DType::kFP32;
  return m;
}

TEST(LowerBound, HandComputedNicBound) {
  TransferPlan p = plan();
  // GPUs 0 and 1 of node 0 share NIC 0: 1 GB + 2 GB leave through it.
  p.addMove(move(0, 8, 0, 250000000));   // 1e9 B, node 0 nic 0 -> node 2 nic 0
  p.addMove(move(1, 10, 0, 500000000));  // 2e9 B, node 0 nic 0 -> node 2 nic 1
  p.addMove(move(4, 11, 0, 125000000));  // 0.5e9 B, node 1 nic 0 -> node 2 nic 1
  auto lb = lowerBound(p, cluster());
  ASSERT_TRUE(lb.isOk()) << lb.status().toString();
  EXPECT_DOUBLE_EQ(lb->seconds, 3e9 / 10e9);
  EXPECT_EQ(lb->bottleneck.name, "node 0 nic 0 tx");
  EXPECT_EQ(lb->nicRx.name, "node 2 nic 1 rx");
  EXPECT_DOUBLE_EQ(lb->nicRx.seconds(), 2.5e9 / 10e9);
  EXPECT_DOUBLE_EQ(lb->ratio(0.6), 2.0);
}

// A NIC that carries less payload than its rate (an emulated link's shaper
// meters whole frames) bounds the payload at that share.
TEST(LowerBound, NicBoundAtThePayloadRate) {
  TransferPlan p = plan();
  p.addMove(move(0, 8, 0, 250000000));  // 1e9 B through node 0 nic 0
  workloads::ClusterSpec c = cluster();
  c.nicPayloadFraction = 1448.0 / 1514.0;
  auto lb = lowerBound(p, c);
  ASSERT_TRUE(lb.isOk()) << lb.status().toString();
  EXPECT_DOUBLE_EQ(lb->seconds, 1e9 / (10e9 * 1448 / 1514));
  auto e = workloads::parseEmulated("emulated:nodes=3,gpus=4,nic=10GB/s,nics=2");
  ASSERT_TRUE(e.isOk()) << e.status().toString();
  EXPECT_DOUBLE_EQ(e->nicPayloadBps(), 10e9 * 1448 / 1514);
}

TEST(LowerBound, NvlinkAndPcie) {
  TransferPlan p = plan();
  p.params.options.staging = Staging::kHost;
  p.holdings.push_back({0, Space::kTrain, 0, move(0, 0, 0, 1000000000).box, DType::kFP32});
  p.holdings.push_back({0, Space::kStaging, 0, move(0, 0, 0, 1000000000).box, DType::kFP32});
  Move c = move(0, 0, 0, 1000000000);  // 4e9 B D2H at 20e9 -> 0.2 s
  c.kind = MoveKind::kConvert;
  c.srcSpace = Space::kTrain;
  c.dstSpace = Space::kStaging;
  p.addMove(c);
  p.addMove(move(1, 2, 0, 1000000000));  // 4e9 B NVLink at 100e9 -> 0.04 s
  auto lb = lowerBound(p, cluster());
  ASSERT_TRUE(lb.isOk()) << lb.status().toString();
  EXPECT_DOUBLE_EQ(lb->seconds, 0.2);
  EXPECT_EQ(lb->bottleneck.name, "node 0 gpu 0 pcie d2h");
  EXPECT_DOUBLE_EQ(lb->nvlink.seconds(), 0.04);
  EXPECT_TRUE(lb->nicTx.name.empty());
}

TEST(LowerBound, OversubscribedFabric) {
  TransferPlan p = plan();
  auto c = cluster();
  c.fabric.nodesPerLeaf = 1;
  c.fabric.oversubscription = 4.0;      // uplink = 1 node * 2 NICs * 10e9 / 4 = 5e9
  p.addMove(move(0, 8, 0, 250000000));  // 1e9 B
  p.addMove(move(2, 9, 0, 250000000));  // 1e9 B on the other NIC
  auto lb = lowerBound(p, c);
  ASSERT_TRUE(lb.isOk());
  EXPECT_DOUBLE_EQ(lb->seconds, 2e9 / 5e9);
  EXPECT_EQ(lb->bottleneck.name, "leaf 0 uplink");
}

TEST(LowerBound, RejectsMisfitClusters) {
  TransferPlan p = plan();
  p.addMove(move(0, 8, 0, 10));
  auto small = cluster();
  small.nodes = 2;
  EXPECT_FALSE(lowerBound(p, small).isOk());
  auto noNic = cluster();
  noNic.nicBps = 0;
  auto r = lowerBound(p, noNic);
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("no bandwidth"), std::string::npos);
}

}  // namespace
}  // namespace tide::plan
