#include "workloads/cluster.h"

#include <gtest/gtest.h>

#include "engine/core/units.h"
#include "workloads/rollout.h"

namespace tide::workloads {
namespace {

TEST(Cluster, PresetsLoadAndValidate) {
  for (const char* name : {"h100-ib-8x400", "h800-roce", "h20", "laptop"}) {
    auto c = loadCluster(name);
    ASSERT_TRUE(c.isOk()) << name << ": " << c.status().toString();
    EXPECT_TRUE(validateCluster(*c).isOk());
  }
  auto h100 = orThrow(loadCluster("h100-ib-8x400"));
  EXPECT_EQ(h100.worldSize(), 256);
  EXPECT_DOUBLE_EQ(h100.nicBps, 50e9);
  EXPECT_DOUBLE_EQ(h100.hbmBps, 3.35e12);
  EXPECT_NE(h100.toString().find("HBM 3350 GB/s"), std::string::npos);
  EXPECT_EQ(orThrow(loadCluster("laptop")).hbmBps, 0);  // not a limit there
  EXPECT_EQ(h100.nicOfGpu(5), 5);
  auto four = orThrow(loadCluster("h100-ib-8x400:nodes=4"));
  EXPECT_EQ(four.nodes, 4);
  EXPECT_EQ(orThrow(loadCluster("h20")).nicOfGpu(5), 2);  // 8 GPUs over 4 NICs
  EXPECT_EQ(loadCluster("nope").status().code(), Code::kNotFound);
}

TEST(Cluster, Emulated) {
  auto c = orThrow(parseEmulated("emulated:nodes=2,gpus=4,nic=10Gbps"));
  EXPECT_EQ(c.worldSize(), 8);
  EXPECT_DOUBLE_EQ(c.nicBps, 10e9 / 8);
  EXPECT_EQ(c.nicsPerNode, 4);
  EXPECT_FALSE(parseEmulated("emulated:nodes=2,gpus=4").isOk());
  EXPECT_FALSE(parseEmulated("emulated:nodes=0,gpus=4,nic=1GB/s").isOk());
  EXPECT_FALSE(parseEmulated("emulated:nodes=2,color=4,nic=1GB/s").isOk());
  auto twice = parseEmulated("emulated:nodes=1,gpus=4,nic=1Gbps,nodes=2");
  ASSERT_FALSE(twice.isOk());
  EXPECT_NE(twice.status().message().find("'nodes' given twice"), std::string::npos);
  EXPECT_FALSE(parseEmulated("emulated:nodes=1,gpus=4,nic=1Gbps,nic=1GBps").isOk());
  EXPECT_FALSE(parseEmulated("nodes=2").isOk());
  // loadCluster takes the same spec whatever key comes first.
  auto first = orThrow(loadCluster("emulated:nodes=8,gpus=2,nic=100Mbps,nics=1"));
  EXPECT_EQ(first.nodes, 8);
  EXPECT_EQ(first.worldSize(), 16);
}

TEST(Cluster, TomlRejectsBadValues) {
  const char* base = "name='x'\nnodes=2\ngpus_per_node=8\nnics_per_node=8\n";
  EXPECT_TRUE(parseClusterToml(std::string(base) + "nic_gbps=50\n", "t").isOk());
  EXPECT_FALSE(parseClusterToml(std::string(base) + "nic_gbps=-1\n", "t").isOk());
  EXPECT_FALSE(parseClusterToml(std::string(base) + "nic_gbps=0\n", "t").isOk());
  EXPECT_FALSE(
      parseClusterToml(std::string(base) + "nic_gbps=50\noversubscription=0.5\n", "t").isOk());
  EXPECT_FALSE(parseClusterToml(std::string(base) + "nic_gbps=50\nfoo=1\n", "t").isOk());
  EXPECT_FALSE(parseClusterToml("name='x'\nnodes=[1\n", "t").isOk());
}

TEST(Rollout, LongTailedAndDeterministic) {
  RolloutConfig cfg;
  cfg.samplesPerStep = 2000;
  auto a = generateRollout(cfg, 3), b = generateRollout(cfg, 3), c = generateRollout(cfg, 4);
  ASSERT_EQ(a.size(), 2000u);
  uint32_t maxResp = 0;
  double sum = 0, lastEnd = 0;
  int sameAsOther = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].responseTokens, b[i].responseTokens);
    sameAsOther += a[i].responseTokens == c[i].responseTokens;
    EXPECT_GE(a[i].endS, a[i].startS);
    EXPECT_LE(a[i].responseTokens, cfg.maxResponse);
    maxResp = std::max(maxResp, a[i].responseTokens);
    sum += a[i].responseTokens;
    lastEnd = std::max(lastEnd, a[i].endS);
  }
  EXPECT_LT(sameAsOther, 200);
  // The tail: the longest response is many times the mean.
  EXPECT_GT(maxResp, 5 * sum / a.size());
  EXPECT_GT(lastEnd, 0);
}

}  // namespace
}  // namespace tide::workloads
