// Colocated inference (`[infer] colocated = true`): inference rank i on
// training rank i's GPU. The bytes each rank receives are checked against a
// count made from the model's inventory and the inference layout's shards
// (workloads/), not from the plan's own byte accounting; a move between two
// ranks of one GPU is a device copy through the GPU's memory (a CUDA-IPC
// mapped read), never host memory, NVLink or a NIC.

#include <gtest/gtest.h>

#include <map>

#include "engine/sync/strategy_registry.h"
#include "sim/plan_lowering.h"
#include "tests/sim/small_scenario.h"
#include "workloads/layout.h"
#include "workloads/model.h"

namespace tide::sim {
namespace {

// Host memory and NICs slow (1 GB/s) and HBM fast: a same-GPU move put on
// either of them would be the bottleneck.
std::string colocatedText(const std::string& infer = "engines=4,tp=2,ep=2",
                          const std::string& where = "colocated = true") {
  return R"(
name = "colocated"
[model]
zoo = "qwen3-30b-a3b"
[train]
layout = "dp=8"
nodes = 1
[infer]
layout = ")" +
         infer + "\"\n" + where + R"(
[cluster]
gpus_per_node = 8
nic = "1GB/s"
nvlink = "370GB/s"
pcie_h2d = "55GB/s"
pcie_d2h = "47GB/s"
host_mem = "1GB/s"
hbm = "3000GB/s"
[strategy]
bucket = "1GB"
wire_dtype = "bf16"
)";
}

int gpuOf(const plan::TransferPlan& p, uint32_t rank, int gpn) {
  return static_cast<int>(p.ranks[rank].node) * gpn + static_cast<int>(p.ranks[rank].gpu);
}

TEST(Colocated, ScenarioKeyPlacesInferenceOnTrainingGpus) {
  Scenario sc = load(colocatedText());
  EXPECT_TRUE(sc.colocated);
  EXPECT_EQ(sc.inferNodes, 0);
  EXPECT_EQ(sc.cluster.nodes, 1);
  plan::TransferPlan p = planOf(sc, "p2p");
  const uint32_t nt = 8;
  ASSERT_EQ(p.ranks.size(), 16u);
  for (uint32_t i = 0; i < nt; ++i) EXPECT_EQ(gpuOf(p, nt + i, 8), gpuOf(p, i, 8)) << i;
  // Refused: more inference than training ranks, or nodes of their own.
  EXPECT_FALSE(parseScenario(colocatedText("engines=8,tp=2,ep=2"), "t").isOk());
  EXPECT_FALSE(
      parseScenario(colocatedText("engines=4,tp=2,ep=2", "colocated = true\nnodes = 1"), "t")
          .isOk());
  // A step-planned design is not applicable colocated (its sends between two
  // ranks of one GPU would take no link).
  auto d = sync::findStrategy("verl-nccl");
  ASSERT_TRUE(d.isOk());
  EXPECT_FALSE(harness::scenarioPlan(sc, **d).isOk());
}

TEST(Colocated, BytesPerRankMatchAnIndependentCount) {
  Scenario sc = load(colocatedText());
  workloads::ModelInventory inv = workloads::buildInventory(sc.model);
  std::map<uint32_t, double> held;  // by plan rank: BF16 bytes of its shards
  double total = 0;
  for (int i = 0; i < sc.infer.worldSize(); ++i) {
    for (const auto& sh : workloads::inferShards(inv, sc.infer, i)) {
      const double b = static_cast<double>(sh.box.volume()) * 2;
      held[static_cast<uint32_t>(8 + i)] += b;
      total += b;
    }
  }
  for (std::string_view name : {"p2p", "p2p-rr"}) {
    plan::TransferPlan p = planOf(sc, name);
    std::map<uint32_t, double> sent, received;
    for (const auto& m : p.moves) {
      if (m.kind == plan::MoveKind::kConvert) continue;
      EXPECT_LT(m.src, 8u) << name;
      EXPECT_GE(m.dst, 8u) << name;
      sent[m.src] += static_cast<double>(m.bytes);
      received[m.dst] += static_cast<double>(m.bytes);
    }
    for (const auto& [rank, bytes] : held) EXPECT_DOUBLE_EQ(received[rank], bytes) << name << rank;
    double sentAll = 0;
    for (const auto& [rank, bytes] : sent) sentAll += bytes;
    EXPECT_DOUBLE_EQ(sentAll, total) << name;
  }
}

TEST(Colocated, SameGpuMovesAreDeviceCopies) {
  Scenario sc = load(colocatedText());
  plan::TransferPlan p = planOf(sc, "p2p");
  // Only the moves between the two ranks of one GPU, without the plan's
  // other work: their time is the device copies'.
  plan::TransferPlan local = p;
  local.moves.clear();
  local.work = {};
  std::map<int, double> perGpu;
  for (const auto& m : p.moves) {
    const int a = gpuOf(p, m.src, 8), b = gpuOf(p, m.dst, 8);
    if (a != b || m.src == m.dst) continue;
    local.moves.push_back(m);
    perGpu[a] += static_cast<double>(m.bytes);
  }
  ASSERT_FALSE(local.moves.empty()) << "p2p planned no same-GPU move";
  auto r = simulatePlan(local, sc.cluster, sc.calib);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  // Each byte read and written once through the GPU's memory.
  double bound = 0;
  for (const auto& [gpu, bytes] : perGpu) bound = std::max(bound, 2 * bytes / sc.cluster.hbmBps);
  EXPECT_NEAR(r->lowerBoundSeconds, bound, bound * 1e-9);
  EXPECT_NE(r->bottleneck.find("hbm"), std::string::npos) << r->bottleneck;
  EXPECT_NEAR(r->seconds, bound, bound * 1e-6);
  for (const auto& e : r->events) {
    if (e.bytes <= 0) continue;
    EXPECT_EQ(e.path, TaskPath::kCompute) << taskPathName(e.path);
  }
}

}  // namespace
}  // namespace tide::sim
