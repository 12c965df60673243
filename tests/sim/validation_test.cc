// tide validate's comparison on a synthetic real-run JSON (the real executor's
// tide.sync/1 result), and a small plan run through the simulator.

#include "sim/validation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "engine/plan/schedule.h"
#include "sim/plan_lowering.h"
#include "sim/unit_validation.h"

namespace tide::sim {
namespace {

nlohmann::json realRun(std::vector<double> secs, double bytes) {
  nlohmann::json steps = nlohmann::json::array();
  for (double s : secs) steps.push_back({{"seconds", s}, {"bytes", bytes}});
  return {{"schema", "tide.sync/1"},
          {"strategy", "p2p"},
          {"steps", steps},
          {"lower_bound_seconds", 0.5},
          {"verified", true}};
}

TEST(Validation, ErrorPerStepAndVerdict) {
  auto v = compareWithReal(realRun({1.0, 1.1}, 100), 1.05, 100);
  ASSERT_TRUE(v.isOk()) << v.status().toString();
  ASSERT_EQ(v->steps.size(), 2u);
  EXPECT_NEAR(v->steps[0].error, 0.05, 1e-12);
  EXPECT_NEAR(v->steps[1].error, 1.05 / 1.1 - 1, 1e-12);
  EXPECT_TRUE(v->pass);
  auto far = compareWithReal(realRun({1.0}, 100), 1.5, 100);
  ASSERT_TRUE(far.isOk());
  EXPECT_FALSE(far->pass);
}

TEST(Validation, LocalBytesCountTowardsThePlan) {
  // tide sync reports network bytes and local copies apart; the plan's total
  // has both.
  auto j = realRun({1.0}, 70);
  j["steps"][0]["local_bytes"] = 30;
  EXPECT_TRUE(compareWithReal(j, 1.0, 100).isOk());
  EXPECT_FALSE(compareWithReal(realRun({1.0}, 70), 1.0, 100).isOk());
}

TEST(Validation, RejectsForeignOrUncheckedRuns) {
  auto j = realRun({1.0}, 100);
  j["verified"] = false;
  EXPECT_FALSE(compareWithReal(j, 1.0, 100).isOk());
  j = realRun({1.0}, 100);
  j["schema"] = "other/1";
  EXPECT_FALSE(compareWithReal(j, 1.0, 100).isOk());
  EXPECT_FALSE(compareWithReal(realRun({}, 100), 1.0, 100).isOk());
  EXPECT_FALSE(compareWithReal(realRun({1.0}, 100), 1.0, 200).isOk());  // another plan
  EXPECT_FALSE(compareWithReal(realRun({-1.0}, 100), 1.0, 100).isOk());
}

// Ranks `nodes[i]` (gpu = how many ranks came before on that node) holding
// one 1024x1024 bf16 tensor each; `hops` moves it from rank a to rank b, in
// one bucket of each of `stages` stages (independent: they run at once).
plan::TransferPlan chainPlan(std::vector<uint32_t> nodes,
                             std::vector<std::pair<uint32_t, uint32_t>> hops, plan::MoveKind kind,
                             int stages = 1, uint64_t chunk = 256 * 1024) {
  plan::TransferPlan p;
  p.params.options.chunkBytes = chunk;
  p.strategy = kind == plan::MoveKind::kBroadcastHop ? "broadcast" : "p2p";
  std::vector<uint32_t> perNode(8, 0);
  for (uint32_t r = 0; r < nodes.size(); ++r) {
    p.ranks.push_back(
        {r, r == 0 ? plan::Role::kTrainer : plan::Role::kInference, nodes[r], perNode[nodes[r]]++});
  }
  auto box = plan::RegionBox::from(workloads::Box{{0, 0}, {1024, 1024}});
  if (!box.isOk()) throw StatusError(box.status());
  for (int si = 0; si < stages; ++si) {
    // One tensor per stage: a plan writes each byte once.
    plan::TensorInfo t;
    t.id = static_cast<uint32_t>(si);
    t.name = "w" + std::to_string(si);
    t.shape = {1024, 1024};
    p.tensors.push_back(t);
    p.holdings.push_back({0, plan::Space::kTrain, t.id, *box, workloads::DType::kBF16});
    for (uint32_t r = 1; r < nodes.size(); ++r)
      p.holdings.push_back({r, plan::Space::kInfer, t.id, *box, workloads::DType::kBF16});
    uint32_t st = p.addStage("write" + std::to_string(si));
    for (auto [a, b] : hops) {
      plan::Move m;
      m.src = a;
      m.dst = b;
      m.tensor = t.id;
      m.box = *box;
      m.srcSpace = a == 0 ? plan::Space::kTrain : plan::Space::kInfer;
      m.dstSpace = plan::Space::kInfer;
      m.kind = kind;
      m.stage = st;
      p.addMove(m);
    }
  }
  return p;
}

constexpr double kTensor = 2.0 * 1024 * 1024;   // bytes
constexpr double kPayload = 1e9 * 1448 / 1514;  // 1 GB/s emulated link, TCP payload

TEST(PlanLowering, OneWriteRunsAtTheEmulatedNicRate) {
  auto p = chainPlan({0, 1}, {{0, 1}}, plan::MoveKind::kWrite);
  auto cluster = workloads::parseEmulated("emulated:nodes=2,gpus=1,nic=1GB/s");
  ASSERT_TRUE(cluster.isOk()) << cluster.status().toString();
  auto r = simulatePlan(p, *cluster, Calibration{});
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  // 2 MiB of TCP payload at 1448/1514 of 1 GB/s (Ethernet frames metered by
  // the shaper) plus one fabric latency.
  EXPECT_NEAR(r->seconds, kTensor / kPayload, 1e-4);
  EXPECT_EQ(r->events.size(), 1u);
  // A lowered plan has no control rounds around it: it is all transfer.
  EXPECT_EQ(r->transferSeconds, r->seconds);
  EXPECT_EQ(r->prepareSeconds + r->finalizeSeconds, 0.0);
}

TEST(PlanLowering, IntraNodeTcpRunsAtTheHostRate) {
  auto p = chainPlan({0, 0}, {{0, 1}}, plan::MoveKind::kWrite);
  auto cluster = workloads::parseEmulated("emulated:nodes=1,gpus=2,nic=1GB/s");
  ASSERT_TRUE(cluster.isOk()) << cluster.status().toString();
  auto free = simulatePlan(p, *cluster, Calibration{});  // no host figure: not a limit
  ASSERT_TRUE(free.isOk()) << free.status().toString();
  EXPECT_LT(free->seconds, 1e-6);
  LoweringOptions slow;
  slow.hostTcpBps = 0.5e9;
  auto host = simulatePlan(p, *cluster, Calibration{}, slow);
  ASSERT_TRUE(host.isOk()) << host.status().toString();
  EXPECT_NEAR(host->seconds, kTensor / 0.5e9, 1e-6);
  LoweringOptions negative;
  negative.hostTcpBps = -1;
  EXPECT_FALSE(simulatePlan(p, *cluster, Calibration{}, negative).isOk());
}

TEST(PlanLowering, ChainHopsInsideANodePassThroughTheHostPieceByPiece) {
  // head (node 0) -> rank 1 (node 1) -> rank 2 (node 1) -> rank 3 (node 1).
  auto p = chainPlan({0, 1, 1, 1}, {{0, 1}, {1, 2}, {2, 3}}, plan::MoveKind::kBroadcastHop);
  auto cluster = workloads::parseEmulated("emulated:nodes=2,gpus=3,nic=1GB/s");
  ASSERT_TRUE(cluster.isOk()) << cluster.status().toString();
  const double chunk = 256 * 1024, host = 0.1e9;
  LoweringOptions o;
  o.hostTcpBps = host;
  auto r = simulatePlan(p, *cluster, Calibration{}, o);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  // Each piece is a unit of its own (8 of 256 KiB per hop): the first crosses
  // the node link, then both intra-node hops carry every byte over the
  // host's loopback, which never idles once the first piece is in: one piece
  // at the payload rate, then the tensor twice at the host rate.
  EXPECT_NEAR(r->seconds, chunk / kPayload + 2 * kTensor / host, 1e-4);
  size_t units = 0;
  for (const auto& e : r->events) units += e.unit != kNoUnit;
  EXPECT_EQ(units, 3u * 8u) << "a priced piece per hop and chunk";
}

TEST(PlanLowering, ConcurrentChainsFillEachHopAtTheirShare) {
  // head (node 0) -> rank 1 (node 1) -> rank 2 (node 2), in one stage and in
  // two: two chains share every link, so each runs at half the link and its
  // second hop waits for one piece at that half (a pipeline of 8 pieces and
  // 2 hops takes 9 piece times).
  auto cluster = workloads::parseEmulated("emulated:nodes=3,gpus=1,nic=1GB/s");
  ASSERT_TRUE(cluster.isOk()) << cluster.status().toString();
  const double chunk = 256 * 1024;
  for (int stages : {1, 2}) {
    auto p = chainPlan({0, 1, 2}, {{0, 1}, {1, 2}}, plan::MoveKind::kBroadcastHop, stages);
    auto r = simulatePlan(p, *cluster, Calibration{});
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    EXPECT_NEAR(r->seconds, stages * (kTensor + chunk) / kPayload, 1e-4) << stages << " stages";
  }
}

// A trainer converts its tensor into a staging replica (a local unit), then
// writes it to rank 1 (a write unit that waits for the conversion).
plan::TransferPlan convertThenWrite() {
  plan::TransferPlan p;
  p.strategy = "p2p";
  p.ranks = {{0, plan::Role::kTrainer, 0, 0}, {1, plan::Role::kInference, 1, 0}};
  auto box = plan::RegionBox::from(workloads::Box{{0, 0}, {1024, 1024}});
  if (!box.isOk()) throw StatusError(box.status());
  plan::TensorInfo t;
  t.name = "w";
  t.shape = {1024, 1024};
  p.tensors.push_back(t);
  p.holdings = {{0, plan::Space::kTrain, 0, *box, workloads::DType::kBF16},
                {0, plan::Space::kStaging, 0, *box, workloads::DType::kBF16},
                {1, plan::Space::kInfer, 0, *box, workloads::DType::kBF16}};
  const uint32_t conv = p.addStage("convert");
  const uint32_t write = p.addStage("write", {plan::Dependency{conv, true}});
  plan::Move c;
  c.src = c.dst = 0;
  c.box = *box;
  c.srcSpace = plan::Space::kTrain;
  c.dstSpace = plan::Space::kStaging;
  c.kind = plan::MoveKind::kConvert;
  c.stage = conv;
  p.addMove(c);
  plan::Move w = c;
  w.dst = 1;
  w.srcSpace = plan::Space::kStaging;
  w.dstSpace = plan::Space::kInfer;
  w.kind = plan::MoveKind::kWrite;
  w.stage = write;
  p.addMove(w);
  return p;
}

TEST(UnitValidation, ARunThatIsItsOwnSimulationAgreesUnitByUnit) {
  auto p = chainPlan({0, 1, 2}, {{0, 1}, {1, 2}}, plan::MoveKind::kBroadcastHop);
  auto cluster = workloads::parseEmulated("emulated:nodes=3,gpus=1,nic=1GB/s");
  ASSERT_TRUE(cluster.isOk()) << cluster.status().toString();
  auto r = simulatePlan(p, *cluster, Calibration{});
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  auto s = plan::Schedule::build(p);
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  const auto sim = simulatedUnits(*r);
  ASSERT_EQ(sim.size(), s->pieces);
  std::vector<UnitTime> real = sim;
  for (auto& t : real) t.step = 1;
  auto e = compareUnits(*s, real, sim);
  ASSERT_TRUE(e.isOk()) << e.status().toString();
  EXPECT_EQ(e->compared, s->pieces);
  EXPECT_EQ(e->worst, 0.0);
  // Every piece 10 % of the update later: each error is that share.
  const double span = r->seconds;
  for (auto& t : real) t.end += 0.1 * span;
  e = compareUnits(*s, real, sim);
  ASSERT_TRUE(e.isOk()) << e.status().toString();
  EXPECT_NEAR(e->median, 0.1 / 1.1, 1e-9);
  // The block round-trips through a tide.sync/1 document.
  auto back = unitTimesFromJson(nlohmann::json::parse(unitTimesJson(real).dump()));
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_EQ(back->size(), real.size());
}

void expectOff(const Result<UnitErrors>& e, const std::string& words) {
  ASSERT_FALSE(e.isOk());
  EXPECT_EQ(e.status().code(), Code::kDataLoss);
  EXPECT_NE(e.status().message().find(words), std::string::npos) << e.status().toString();
}

TEST(UnitValidation, ARunThatDoesNotFollowTheScheduleIsRefused) {
  const auto p = convertThenWrite();
  auto s = plan::Schedule::build(p);
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  ASSERT_EQ(s->units.size(), 2u);
  const std::vector<UnitTime> good = {{1, 0, 0, 0, 0.0, 0.1}, {1, 1, 0, 0, 0.1, 0.5}};
  ASSERT_TRUE(compareUnits(*s, good, {{0, 0, 0, 0, 0, 0.1}, {0, 1, 0, 0, 0.1, 0.5}}).isOk());
  auto bad = good;
  bad.push_back({1, 7, 0, 0, 0.2, 0.3});  // a unit the schedule does not list
  expectOff(compareUnits(*s, bad, good), "which the schedule does not list");
  bad = good;
  bad[1].start = 0.05;  // the write before the conversion it waits for ended
  expectOff(compareUnits(*s, bad, good), "before unit 0 (copy of rank 0), which it waits for");
  bad = {good[0]};  // the write never ran
  expectOff(compareUnits(*s, bad, good), "unit 1 (write of rank 0) piece 0 did not run");
  bad = good;
  bad[1].rank = 1;  // on another rank
  expectOff(compareUnits(*s, bad, good), "ran on rank 1");
  bad = good;
  bad.push_back(good[0]);
  expectOff(compareUnits(*s, bad, good), "ran twice");
  // A simulation that merged units cannot be compared unit by unit.
  auto merged = compareUnits(*s, good, {});
  ASSERT_FALSE(merged.isOk());
  EXPECT_EQ(merged.status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace tide::sim
