// The simulated cluster's paths, and engines placed on the training nodes'
// spare GPUs (`[infer] nodes = 0`).

#include "sim/topology.h"

#include <gtest/gtest.h>

#include "sim/simulator.h"
#include "sim/sweep.h"
#include "tests/sim/small_scenario.h"

namespace tide::sim {
namespace {

TEST(Topology, NcclHopsInsideANodeUseNvlinkRdmaWritesLoopThroughTheNics) {
  auto spec = workloads::loadCluster("h100-ib-8x400:nodes=2");  // a NIC per GPU
  ASSERT_TRUE(spec.isOk()) << spec.status().toString();
  FlowSolver solver;
  Topology t(*spec, 2, solver);
  // Inside node 0: a collective's hop is NVLink, a verbs write leaves GPU
  // 0's NIC and enters GPU 5's.
  EXPECT_EQ(t.path(0, 5), (std::vector<LinkId>{t.gpu(0).nvTx, t.gpu(5).nvRx}));
  std::vector<LinkId> rdma;
  t.appendRdmaPath(0, 5, rdma);
  EXPECT_EQ(rdma, (std::vector<LinkId>{t.nicTx(0), t.nicRx(5)}));
  // Across nodes both take the NICs.
  std::vector<LinkId> across;
  t.appendRdmaPath(0, 13, across);
  EXPECT_EQ(across, t.path(0, 13));
  EXPECT_EQ(across, (std::vector<LinkId>{t.nicTx(0), t.nicRx(13)}));
}

// Four training GPUs (TP4 EP4) and one TP4 engine: on its own node, or on
// the training node's other four GPUs.
void replaceOnce(std::string& text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  text.replace(at, from.size(), to);
}

std::string placed(int inferNodes) {
  std::string t = scenarioText("engines=1,tp=4,ep=4", inferNodes);
  replaceOnce(t, "tp=4,pp=2,ep=8,dp=2", "tp=4,pp=1,ep=4,dp=1");
  replaceOnce(t, "nodes = 2", "nodes = 1");
  return t;
}

TEST(Placement, EnginesMayShareTheTrainingNodes) {
  Scenario shared = load(placed(0));
  EXPECT_TRUE(shared.sharesTrainNodes());
  EXPECT_EQ(shared.inferBase(), 4);  // the GPUs after the training ranks
  EXPECT_EQ(shared.cluster.nodes, 1);
  Scenario own = load(placed(1));
  EXPECT_FALSE(own.sharesTrainNodes());
  EXPECT_EQ(own.inferBase(), 8);
  EXPECT_EQ(own.cluster.nodes, 2);

  // Eight inference GPUs do not fit beside four training ones on one node.
  std::string big = placed(0);
  replaceOnce(big, "engines=1", "engines=2");
  auto r = parseScenario(big, "f.toml");
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("exceed their 8 GPUs"), std::string::npos)
      << r.status().toString();
  // The training ranks need nodes of their own.
  std::string noTrain = placed(0);
  replaceOnce(noTrain, "nodes = 1", "nodes = 0");
  r = parseScenario(noTrain, "f.toml");
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("must be at least 1"), std::string::npos)
      << r.status().toString();
}

TEST(Placement, SharedNodeBroadcastsOverNvlinkAndStillWritesThroughTheNics) {
  Scenario shared = load(placed(0)), own = load(placed(1));
  auto bShared = simulate(shared, "miles-broadcast"), bOwn = simulate(own, "miles-broadcast");
  auto pShared = simulate(shared, "miles-p2p"), pOwn = simulate(own, "miles-p2p");
  ASSERT_TRUE(bShared.isOk() && bOwn.isOk() && pShared.isOk() && pOwn.isOk());
  // NCCL's broadcast chain stays on NVLink inside the node: faster than
  // through the NICs.
  EXPECT_LT(bShared->seconds, bOwn->seconds);
  // The transfer engine's writes take the same NIC links either way.
  EXPECT_NEAR(pShared->seconds, pOwn->seconds, 0.01 * pOwn->seconds);
}

TEST(Placement, SweepsKeepSharedEnginesOrSayWhyNot) {
  Scenario shared = load(placed(0));
  // An EP sweep re-splits the same four inference GPUs beside the training.
  auto ep = applyPoint(shared, "infer_ep", 2);
  ASSERT_TRUE(ep.isOk()) << ep.status().toString();
  EXPECT_TRUE(ep->sharesTrainNodes());
  EXPECT_EQ(ep->infer.engines, 2);
  EXPECT_EQ(ep->cluster.nodes, 1);
  // A node-count sweep would move the engines off the training node.
  auto nodes = applyPoint(shared, "infer_nodes", 1);
  ASSERT_FALSE(nodes.isOk());
  EXPECT_NE(nodes.status().message().find("share the training nodes"), std::string::npos)
      << nodes.status().toString();
}

}  // namespace
}  // namespace tide::sim
