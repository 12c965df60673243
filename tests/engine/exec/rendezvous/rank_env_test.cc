#include "engine/exec/rendezvous/rank_env.h"

#include <gtest/gtest.h>

#include <map>
#include <thread>

#include "engine/core/socket_io.h"

namespace tide::exec {
namespace {

EnvLookup envOf(std::map<std::string, std::string> m) {
  return [m](const std::string& k) -> std::optional<std::string> {
    auto it = m.find(k);
    if (it == m.end()) return std::nullopt;
    return it->second;
  };
}

TEST(RankEnv, TideVariables) {
  auto e = orThrow(readRankEnv(envOf({{"TIDE_RANK", "2"},
                                      {"TIDE_WORLD_SIZE", "4"},
                                      {"TIDE_MASTER_ADDR", "127.0.0.2"},
                                      {"TIDE_MASTER_PORT", "29500"},
                                      {"TIDE_RUN_TOKEN", "abc"},
                                      {"RANK", "0"},
                                      {"WORLD_SIZE", "1"}})));
  EXPECT_EQ(2, e.rank);
  EXPECT_EQ(4, e.worldSize);
  EXPECT_EQ("127.0.0.2", e.masterAddr);
  EXPECT_EQ(29500, e.masterPort);
  EXPECT_EQ("abc", e.token);
  EXPECT_EQ("TIDE", e.source);
  EXPECT_FALSE(e.storeExternal);
}

TEST(RankEnv, OtherLaunchers) {
  auto mpi = orThrow(readRankEnv(envOf({{"OMPI_COMM_WORLD_RANK", "1"},
                                        {"OMPI_COMM_WORLD_SIZE", "2"},
                                        {"TIDE_MASTER_PORT", "1234"},
                                        {"TIDE_RUN_TOKEN", "t"}})));
  EXPECT_EQ(1, mpi.rank);
  EXPECT_EQ("OpenMPI", mpi.source);
  auto slurm = orThrow(readRankEnv(envOf({{"SLURM_PROCID", "3"},
                                          {"SLURM_NTASKS", "8"},
                                          {"MASTER_ADDR", "node0"},
                                          {"MASTER_PORT", "29500"},
                                          {"SLURM_JOB_ID", "77"},
                                          {"SLURM_STEP_ID", "1"}})));
  EXPECT_EQ(3, slurm.rank);
  EXPECT_EQ(8, slurm.worldSize);
  EXPECT_EQ("node0", slurm.masterAddr);
  EXPECT_EQ("77.1", slurm.token);
  auto torch = orThrow(readRankEnv(envOf({{"RANK", "0"},
                                          {"WORLD_SIZE", "2"},
                                          {"MASTER_PORT", "29500"},
                                          {"TORCHELASTIC_RUN_ID", "run9"}})));
  EXPECT_EQ("torchrun", torch.source);
  EXPECT_EQ("run9", torch.token);
  EXPECT_EQ("127.0.0.1", torch.masterAddr);
}

TEST(RankEnv, ListenAddress) {
  std::map<std::string, std::string> m = {{"OMPI_COMM_WORLD_RANK", "1"},
                                          {"OMPI_COMM_WORLD_SIZE", "2"},
                                          {"TIDE_MASTER_ADDR", "127.0.0.2"},
                                          {"TIDE_MASTER_PORT", "1234"},
                                          {"TIDE_RUN_TOKEN", "t"}};
  // A master on loopback: one host, the ranks listen on loopback.
  auto e = orThrow(readRankEnv(envOf(m)));
  EXPECT_EQ("", e.listenAddress);
  EXPECT_EQ("127.0.0.1", orThrow(listenAddressFor(e)));
  e.masterAddr = "localhost";
  EXPECT_EQ("127.0.0.1", orThrow(listenAddressFor(e)));
  // Named explicitly, it wins.
  m["TIDE_LISTEN_ADDR"] = "198.51.100.7";
  e = orThrow(readRankEnv(envOf(m)));
  EXPECT_EQ("198.51.100.7", orThrow(listenAddressFor(e)));
}

TEST(RankEnv, BadInputIsClear) {
  EXPECT_EQ(Code::kNotFound, readRankEnv(envOf({})).status().code());
  auto bad = readRankEnv(envOf({{"TIDE_RANK", "-1"}, {"TIDE_WORLD_SIZE", "2"}}));
  EXPECT_EQ(Code::kInvalidArgument, bad.status().code());
  EXPECT_NE(std::string::npos, bad.status().message().find("TIDE_RANK"));
  EXPECT_FALSE(readRankEnv(envOf({{"TIDE_RANK", "2"}, {"TIDE_WORLD_SIZE", "2"}})).isOk());
  EXPECT_FALSE(readRankEnv(envOf({{"TIDE_RANK", "x"}, {"TIDE_WORLD_SIZE", "2"}})).isOk());
  auto noPort = readRankEnv(envOf({{"TIDE_RANK", "0"}, {"TIDE_WORLD_SIZE", "2"}}));
  EXPECT_NE(std::string::npos, noPort.status().message().find("MASTER_PORT"));
  auto noToken =
      readRankEnv(envOf({{"TIDE_RANK", "0"}, {"TIDE_WORLD_SIZE", "2"}, {"TIDE_MASTER_PORT", "1"}}));
  EXPECT_NE(std::string::npos, noToken.status().message().find("TIDE_RUN_TOKEN"));
  EXPECT_FALSE(readRankEnv(envOf({{"TIDE_RANK", "0"},
                                  {"TIDE_WORLD_SIZE", "2"},
                                  {"TIDE_MASTER_PORT", "70000"},
                                  {"TIDE_RUN_TOKEN", "t"}}))
                   .isOk());
  // A single process needs nothing else.
  EXPECT_TRUE(readRankEnv(envOf({{"TIDE_RANK", "0"}, {"TIDE_WORLD_SIZE", "1"}})).isOk());
}

TEST(RankEnv, RankZeroHostsOthersConnect) {
  int port = 0;
  {
    auto l = orThrow(listenTcp("127.0.0.1", 0, 1));
    port = boundPort(l.get());
  }
  RankEnv r0;
  r0.worldSize = 2;
  r0.masterPort = port;
  r0.token = "tk";
  RankEnv r1 = r0;
  r1.rank = 1;
  auto s0 = orThrow(connectStore(r0, 5));
  auto s1 = orThrow(connectStore(r1, 5));
  ASSERT_TRUE(s1->set("hello", "from 1").isOk());
  EXPECT_EQ("from 1", orThrow(s0->get("hello", 1)));
  // Rank 0 with an external store connects instead of hosting.
  RankEnv ext = r0;
  ext.storeExternal = true;
  auto s2 = orThrow(connectStore(ext, 5));
  EXPECT_EQ("from 1", orThrow(s2->get("hello", 1)));
  s0.reset();
  s1.reset();
  s2.reset();
  r1.masterPort = port;  // nobody hosts it any more
  auto fail = connectStore(r1, 0.3);
  EXPECT_EQ(Code::kUnavailable, fail.status().code());
}

}  // namespace
}  // namespace tide::exec
