// Plan steps in the simulator (step_lowering.h): each kind takes the time
// its counts and the profile, or its bytes and the cluster, say; locks
// serialize; collectives pay their latency once per real collective; a
// box-level plan's buckets are kept in the groups its options allow.

#include "sim/step_lowering.h"

#include <gtest/gtest.h>

#include "engine/plan/reshard.h"
#include "sim/plan_lowering.h"

namespace tide::sim {
namespace {

using plan::Step;
using plan::StepKind;

// Two nodes of two GPUs; NICs 1 GB/s, D2H 2 GB/s, host memory 4 GB/s, HBM
// 8 GB/s; 1 us latency.
workloads::ClusterSpec cluster() {
  workloads::ClusterSpec c;
  c.name = "test";
  c.nodes = 2;
  c.gpusPerNode = 2;
  c.nicsPerNode = 2;
  c.nicBps = 1e9;
  c.nvlinkBps = 1e10;
  c.pcieH2DBps = 2e9;
  c.pcieD2HBps = 2e9;
  c.hostMemBps = 4e9;
  c.hbmBps = 8e9;
  c.fabric.latencySeconds = 1e-6;
  return c;
}

Calibration costs() {
  Calibration k;
  k.hostOpSeconds = 1e-5;
  k.pyStepSeconds = 1e-7;
  k.engineCallSeconds = 1e-3;
  k.mlaRequantSeconds = 2e-3;
  k.registerPerPageSeconds = 1e-6;
  k.lockPollSeconds = 0.1;
  return k;
}

plan::TransferPlan withRanks() {
  plan::TransferPlan p;
  p.strategy = "steps";
  p.ranks = *plan::placeRanks(2, 2, plan::Placement{2, false, -1});  // node 0 trains, node 1 serves
  return p;
}

Step sized(StepKind k, uint32_t rank, double bytes, uint16_t stage) {
  Step s;
  s.kind = k;
  s.rank = rank;
  s.bytes = bytes;
  s.stage = stage;
  return s;
}

TEST(StepLowering, CountedStepsArePricedByTheProfile) {
  auto p = withRanks();
  auto& g = p.work;
  uint16_t st = g.stage("work");
  uint32_t a = g.add(StepKind::kHostOps, 0, 1000, st);    // 10 ms
  g.steps[a].loopSteps = 1e5;                             // + 10 ms
  uint32_t b = g.add(StepKind::kControlRound, 2, 3, st);  // 3 ms
  uint32_t c = g.add(StepKind::kPostprocess, 3, 61, st);  // 122 ms
  uint32_t d = g.add(StepKind::kRegister, 1, 50000, st);  // 50 ms, beside the chain
  g.dep(a, b);
  g.dep(b, c);
  (void)d;
  auto r = simulatePlan(p, cluster(), costs());
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_NEAR(r->seconds, 0.010 + 0.010 + 0.003 + 0.122, 1e-12);
  EXPECT_NEAR(r->registrationSeconds, 0.05, 1e-12);
  // No profile, no cost: the counts alone take no time.
  auto free = simulatePlan(p, cluster(), Calibration{});
  ASSERT_TRUE(free.isOk());
  EXPECT_EQ(free->seconds, 0.0);
}

TEST(StepLowering, ByteStepsRunOnTheirLinks) {
  auto p = withRanks();
  auto& g = p.work;
  uint16_t st = g.stage("work");
  uint32_t pass = g.add(sized(StepKind::kDevicePass, 0, 8e9, st));   // 1 s at HBM
  uint32_t d2h = g.add(sized(StepKind::kDeviceToHost, 0, 2e9, st));  // 1 s at D2H
  Step w = sized(StepKind::kHostWrite, 0, 1e9, st);                  // 1 s at the NIC
  w.peer = 2;
  uint32_t wr = g.add(w);
  g.dep(pass, d2h);
  g.dep(d2h, wr);
  auto r = simulatePlan(p, cluster(), costs());
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_NEAR(r->seconds, 3.0 + 1e-6, 1e-9);
  EXPECT_DOUBLE_EQ(r->bytesPerInferRank, 1e9);  // what the write delivered
}

TEST(StepLowering, CollectivesPayTheirLatencyOncePerRealCollective) {
  auto p = withRanks();
  auto& g = p.work;
  uint16_t st = g.stage("gather");
  Step ag;
  ag.kind = StepKind::kAllGather;
  ag.stage = st;
  ag.group = g.group({0, 2});  // across the nodes: a ring over two NICs
  ag.bytes = 2e9;              // half crosses each NIC: 1 s
  ag.lanes = 1;
  ag.count = 1;
  g.add(ag);
  auto one = simulatePlan(p, cluster(), costs());
  ASSERT_TRUE(one.isOk()) << one.status().toString();
  p.work.steps[0].count = 1000;  // a merged step of 1000 collectives
  auto many = simulatePlan(p, cluster(), costs());
  ASSERT_TRUE(many.isOk());
  // The ring's latency (1 us, one hop each way) once per collective.
  EXPECT_NEAR(one->seconds, 1.0 + 1e-6, 1e-9);
  EXPECT_NEAR(many->seconds - one->seconds, 999 * 1e-6, 1e-9);
  // A one-member group moves nothing.
  p.work.groups[0] = {0};
  auto alone = simulatePlan(p, cluster(), costs());
  ASSERT_TRUE(alone.isOk());
  EXPECT_EQ(alone->seconds, 0.0);
}

TEST(StepLowering, ABroadcastReachesEveryReceiverAndALockSerializes) {
  auto p = withRanks();
  auto& g = p.work;
  uint16_t st = g.stage("bcast");
  int32_t lock = g.lock(false);
  uint32_t receivers = g.group({2, 3});
  std::vector<uint32_t> ends;
  for (int i = 0; i < 2; ++i) {
    uint32_t call = g.add(StepKind::kControlRound, static_cast<uint32_t>(i), 1, st);
    g.steps[call].acquire = lock;
    Step b = sized(StepKind::kBroadcast, static_cast<uint32_t>(i), 1e9, st);
    b.group = receivers;
    b.lanes = 1;
    b.count = 1;
    uint32_t bc = g.add(b);
    uint32_t rel = g.join();
    g.steps[rel].release = lock;
    g.dep(call, bc);
    g.dep(bc, rel);
    ends.push_back(rel);
  }
  auto r = simulatePlan(p, cluster(), costs());
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  // Each 1 GB broadcast crosses one 1 GB/s NIC: 1 s; the lock keeps the
  // two apart, each after its 1 ms call.
  EXPECT_NEAR(r->seconds, 2 * (1e-3 + 1.0), 1e-3);
  EXPECT_DOUBLE_EQ(r->bytesPerInferRank, 2e9);
  // A collective cannot hold a lock (one flow per lane).
  p.work.steps[1].acquire = lock;
  EXPECT_FALSE(simulatePlan(p, cluster(), costs()).isOk());
}

TEST(PlanLowering, BucketsAreKeptInTheGroupsTheOptionsAllow) {
  // 8 buckets of one write each, from rank 0 to rank 2.
  auto p = withRanks();
  plan::TensorInfo t;
  t.name = "w";
  t.shape = {8, 1024};
  p.tensors.push_back(t);
  auto whole = *plan::RegionBox::from(workloads::Box{{0, 0}, {8, 1024}});
  p.holdings.push_back({0, plan::Space::kTrain, 0, whole, workloads::DType::kBF16});
  p.holdings.push_back({2, plan::Space::kInfer, 0, whole, workloads::DType::kBF16});
  uint32_t st = p.addStage("write");
  for (uint32_t b = 0; b < 8; ++b) {
    plan::Move m;
    m.src = 0;
    m.dst = 2;
    m.box = *plan::RegionBox::from(workloads::Box{{b, 0}, {b + 1, 1024}});
    m.stage = st;
    m.bucket = b;
    p.addMove(m);
  }
  ASSERT_TRUE(p.validate().isOk()) << p.validate().toString();
  auto every = simulatePlan(p, cluster(), costs());
  ASSERT_TRUE(every.isOk()) << every.status().toString();
  EXPECT_EQ(every->flows, 8u);
  EXPECT_EQ(every->bucketsPerStage, 8);
  LoweringOptions four;
  four.maxBucketGroups = 4;
  auto r4 = simulatePlan(p, cluster(), costs(), four);
  ASSERT_TRUE(r4.isOk());
  EXPECT_EQ(r4->flows, 4u);
  EXPECT_DOUBLE_EQ(r4->mergeFactor, 2.0);
  // A budget of 3 flows: halved to 2 groups; of 1: one group.
  four.maxFlows = 3;
  auto r2 = simulatePlan(p, cluster(), costs(), four);
  ASSERT_TRUE(r2.isOk());
  EXPECT_EQ(r2->flows, 2u);
  four.maxFlows = 1;
  auto r1 = simulatePlan(p, cluster(), costs(), four);
  ASSERT_TRUE(r1.isOk());
  EXPECT_EQ(r1->flows, 1u);
  EXPECT_DOUBLE_EQ(r1->mergeFactor, 8.0);
  // The bytes and the time do not depend on the grouping of one pair's writes.
  EXPECT_NEAR(r1->seconds, every->seconds, 1e-9);
  EXPECT_DOUBLE_EQ(r1->bytesPerInferRank, every->bytesPerInferRank);
}

TEST(PlanLowering, AFirstUpdatesMovesStartAfterItsRegistration) {
  // One 16 MiB write from rank 0 to rank 2 (16 ms at 1 GB/s); rank 0 pins
  // 4,096 pages first (4 ms at 1 us a page), rank 2 1,000 pages.
  auto p = withRanks();
  plan::TensorInfo t;
  t.name = "w";
  t.shape = {8, 1024 * 1024};
  p.tensors.push_back(t);
  auto whole = *plan::RegionBox::from(workloads::Box{{0, 0}, {8, 1024 * 1024}});
  p.holdings.push_back({0, plan::Space::kTrain, 0, whole, workloads::DType::kBF16});
  p.holdings.push_back({2, plan::Space::kInfer, 0, whole, workloads::DType::kBF16});
  plan::Move m;
  m.src = 0;
  m.dst = 2;
  m.box = whole;
  m.stage = p.addStage("write");
  p.addMove(m);
  auto plain = simulatePlan(p, cluster(), costs());
  ASSERT_TRUE(plain.isOk()) << plain.status().toString();
  const uint16_t reg = p.work.stage(plan::kStageRegister);
  p.work.add(StepKind::kRegister, 0, 4096, reg);
  p.work.add(StepKind::kRegister, 2, 1000, reg);
  auto first = simulatePlan(p, cluster(), costs());
  ASSERT_TRUE(first.isOk()) << first.status().toString();
  EXPECT_NEAR(first->registrationSeconds, 4096e-6, 1e-12);
  // In sequence, not beside: the write waits for the slower registration.
  EXPECT_NEAR(first->seconds, plain->seconds + 4096e-6, 1e-9);
}

}  // namespace
}  // namespace tide::sim
