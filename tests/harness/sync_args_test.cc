// `tide sync`'s options come from one table: what the command registers is
// what workerArgv() writes back for the ranks, and a rank that parses that
// command line holds the same arguments (the driver's own options left out).

#include "harness/sync_args.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace tide::harness {
namespace {

// Parses `args` (without the program name) as `tide sync` would.
SyncArgs parse(std::vector<std::string> args) {
  SyncArgs a;
  CLI::App app;
  OptionRegistrar r(&app);
  SyncArgs::visit(a, r);
  app.add_flag("--worker", a.worker);
  std::reverse(args.begin(), args.end());  // CLI11 takes them last first
  app.parse(args);
  return a;
}

bool has(const std::vector<std::string>& v, const std::string& flag, const std::string& value) {
  for (size_t i = 0; i + 1 < v.size(); ++i) {
    if (v[i] == flag && v[i + 1] == value) return true;
  }
  return false;
}

TEST(SyncArgs, RanksParseBackWhatTheDriverHolds) {
  const SyncArgs a = parse({"--model",
                            "tiny-moe",
                            "--scale",
                            "3",
                            "--timeout",
                            "0.125",
                            "--store-nodes",
                            "2",
                            "--chaos",
                            "7",
                            "--chaos-rate",
                            "0.25",
                            "--poison",
                            "--colocated",
                            "--json",
                            "out.json",
                            "--ranks",
                            "processes",
                            "--chaos-report",
                            "5",
                            "--chaos-unsafe-inplace",
                            "--join-engine-at-step",
                            "1",
                            "--store-fragment",
                            "1MiB"});
  const std::vector<std::string> argv = workerArgv(a);
  ASSERT_GE(argv.size(), 3u);
  EXPECT_EQ(argv[1], "sync");
  EXPECT_EQ(argv.back(), "--worker");
  EXPECT_TRUE(has(argv, "--timeout", "0.125"));
  EXPECT_TRUE(has(argv, "--chaos-rate", "0.25"));
  EXPECT_TRUE(has(argv, "--store-nodes", "2"));
  EXPECT_NE(std::find(argv.begin(), argv.end(), "--chaos-unsafe-inplace"), argv.end());
  // The driver's own options stay with it.
  EXPECT_EQ(std::find(argv.begin(), argv.end(), "--ranks"), argv.end());
  EXPECT_EQ(std::find(argv.begin(), argv.end(), "--chaos-report"), argv.end());

  const SyncArgs b = parse(std::vector<std::string>(argv.begin() + 2, argv.end()));
  EXPECT_TRUE(b.worker);
  EXPECT_EQ(b.workload.model, "tiny-moe");
  EXPECT_EQ(b.workload.scale, 3);
  EXPECT_TRUE(b.workload.colocated);
  EXPECT_EQ(b.timeout, 0.125);
  EXPECT_EQ(b.store.nodes, 2u);
  EXPECT_EQ(b.chaos.seed, "7");
  EXPECT_EQ(b.chaos.rate, 0.25);
  EXPECT_TRUE(b.chaos.allowInplace);
  EXPECT_TRUE(b.poison);
  EXPECT_EQ(b.json, "out.json");
  EXPECT_EQ(b.joinAtStep, 1);
  EXPECT_EQ(b.storeFragment, "1MiB");
  EXPECT_EQ(b.ranks, RankMode::kAuto);
  EXPECT_EQ(b.chaos.reportEvery, ChaosArgs{}.reportEvery);
  // Written again, the same line: nothing is lost or changed on the way.
  EXPECT_EQ(workerArgv(b), argv);
}

// --device-memory and its staging reach the ranks (they open the shard memory).
TEST(SyncArgs, DeviceMemoryReachesTheRanks) {
  const SyncArgs a = parse({"--device-memory", "--staging", "per-tensor", "--staging-bucket",
                            "1MiB", "--staging-streams", "3", "--device-memory-impl", "host"});
  const std::vector<std::string> argv = workerArgv(a);
  const SyncArgs b = parse(std::vector<std::string>(argv.begin() + 2, argv.end()));
  EXPECT_TRUE(b.deviceMemory);
  EXPECT_EQ(b.staging, Staging::kPerTensor);
  EXPECT_EQ(b.stagingBucket, "1MiB");
  EXPECT_EQ(b.stagingStreams, 3);
  EXPECT_EQ(b.deviceMemoryImpl, ShardMemoryKind::kHost);
  EXPECT_FALSE(parse({}).deviceMemory);
}

}  // namespace
}  // namespace tide::harness
