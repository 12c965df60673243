// Scenario files: presets, labelled published figures, defaults and the
// errors bad input gets.

#include "sim/scenario.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/sync/strategy_registry.h"
#include "harness/sim/scenario_plans.h"
#include "tests/sim/small_scenario.h"

namespace tide::sim {
namespace {

TEST(Scenario, ClusterPresetWithOverrides) {
  std::string t = scenarioText("engines=2,tp=8,ep=8", 2);
  size_t from = t.find("[cluster]"), to = t.find("[strategy]");
  t.replace(from, to - from, "[cluster]\npreset = \"h800-roce\"\nnic = \"40GB/s\"\n");
  Scenario sc = load(t);
  EXPECT_DOUBLE_EQ(sc.cluster.nicBps, 40e9);      // overridden
  EXPECT_DOUBLE_EQ(sc.cluster.nvlinkBps, 160e9);  // from the preset
  EXPECT_EQ(sc.cluster.gpusPerNode, 8);
  std::string bad = t;
  bad.replace(bad.find("h800-roce"), 9, "no-such-cluster");
  auto r = parseScenario(bad, "t");
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("preset"), std::string::npos) << r.status().toString();
}

TEST(Scenario, RejectsUnknownKeysWrongTypesAndInconsistentValues) {
  const std::string ok = scenarioText("engines=2,tp=8,ep=8", 2);
  auto rejects = [&](const std::string& from, const std::string& to, const std::string& why) {
    std::string t = ok;
    size_t at = t.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    t.replace(at, from.size(), to);
    auto r = parseScenario(t, "f.toml");
    ASSERT_FALSE(r.isOk()) << to;
    EXPECT_NE(r.status().message().find(why), std::string::npos) << r.status().toString();
    EXPECT_NE(r.status().message().find("f.toml"), std::string::npos) << r.status().toString();
  };
  rejects("bucket = ", "bucket_size = ", "'bucket_size' is not a known key");
  rejects("[strategy]", "[strategey]", "'strategey' is not a known key");
  rejects("nodes = 2\n[infer]", "nodes = \"2\"\n[infer]", "'nodes' must be an integer");
  rejects("nodes = 2\n[infer]", "nodes = 3\n[infer]", "fill 2 node(s)");
  rejects("nodes = 2\n[infer]", "nodes = 1\n[infer]", "fill 2 node(s)");
  rejects("nic = \"47.5GB/s\"", "nic = 47.5", "must be a rate");
  rejects("nic = \"47.5GB/s\"", "nic = \"47.5GB\"", "unknown rate unit");
  rejects("bucket = \"1GB\"", "bucket = \"0B\"", "must be positive");
  rejects("wire_dtype = \"bf16\"", "wire_dtype = \"fp8\"", "model serves bf16");
  rejects("zoo = \"qwen3-30b-a3b\"", "zoo = \"qwen3-30b-a3b\"\nlayers = 30",
          "cannot be set for a zoo model");
  rejects("[strategy]", "[published]\nbroadcast = 3\n[strategy]", "must be a table");
  rejects("[strategy]", "[published.miles-broadcast]\nrfc = 0\n[strategy]", "must be seconds > 0");
  rejects("[strategy]", "[published.miles-broadcast]\nrfc = \"x\"\n[strategy]",
          "[published.miles-broadcast]");
  rejects("bucket = \"1GB\"", "bucket = \"1GB\"\nbroadcast_bucket = \"4GiB\"",
          "[strategy.<name>] bucket");
  rejects("[strategy]", "[strategy]\nnames = []", "must be a list");
  rejects("[strategy]", "[strategy]\nfirst_update = \"yes\"", "must be true or false");
  rejects("gpus_per_node = 8", "gpus_per_node = 8\nnodes_per_leaf = -1", "must not be negative");
  rejects("layout = \"tp=4,pp=2,ep=8,dp=2\"", "", "'layout' is missing");
  rejects("layout = \"tp=4,pp=2,ep=8,dp=2\"", "layout = \"tp=4,pp=2,ep=7,dp=2\"", "[train]");
  // b is bits, B is bytes: 380 Gb/s is the 47.5 GB/s of the default text.
  std::string bits = ok;
  bits.replace(bits.find("\"47.5GB/s\""), 10, "\"380Gb/s\"");
  auto r = parseScenario(bits, "f.toml");
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_DOUBLE_EQ(r->cluster.nicBps, 47.5e9);
}

TEST(Scenario, PublishedFiguresCarryALabelBesideThePrimaryOne) {
  Scenario sc = load(scenarioText("engines=2,tp=8,ep=8", 2,
                                  "[published.miles-broadcast]\nupdate = 5.0\nrfc = "
                                  "4.0\n[published.miles-p2p]\nupdate = 2.0\n"));
  ASSERT_EQ(sc.published.size(), 3u);
  int primary = 0;
  for (const auto& p : sc.published) {
    if (p.label.empty()) {
      ++primary;
      EXPECT_EQ(p.seconds, p.strategy == "miles-broadcast" ? 5.0 : 2.0);
    } else {
      EXPECT_EQ(p.strategy, "miles-broadcast");
      EXPECT_EQ(p.label, "rfc");
      EXPECT_EQ(p.seconds, 4.0);
    }
  }
  EXPECT_EQ(primary, 2);
}

TEST(Scenario, PublishedSpanFiguresNameTheirSpanInTheUpdatesOrder) {
  Scenario sc = load(scenarioText("engines=2,tp=8,ep=8", 2,
                                  "[published.miles-p2p]\nfinalize = 0.9\nupdate = 7.0\n"
                                  "transfer = 6.0\nprepare = 0.1\n"));
  ASSERT_EQ(sc.published.size(), 4u);
  const char* order[] = {"", "prepare", "transfer", "finalize"};
  const double seconds[] = {7.0, 0.1, 6.0, 0.9};
  for (size_t i = 0; i < 4; ++i) {
    const auto& p = sc.published[i];
    EXPECT_EQ(p.strategy, "miles-p2p");
    EXPECT_TRUE(p.label.empty());
    EXPECT_EQ(p.span, order[i]);
    EXPECT_EQ(p.primary(), i == 0);
    EXPECT_EQ(p.seconds, seconds[i]) << p.span;
  }
  EXPECT_EQ(sc.published[2].name(), "published (transfer span)");
}

TEST(Scenario, EachStrategysRunMayHaveItsOwnBucketAndTheLockPollsByDefault) {
  Scenario one = load(scenarioText("engines=2,tp=8,ep=8", 2));
  EXPECT_EQ(one.strategy.bucketFor("miles-broadcast"), 1000000000u);
  EXPECT_EQ(one.strategy.bucketFor("miles-p2p"), 1000000000u);
  EXPECT_DOUBLE_EQ(one.calib.lockPollSeconds, 0.1);  // the framework's time.sleep(0.1)
  Scenario own =
      load(scenarioText("engines=2,tp=8,ep=8", 2,
                        "lock_poll_ms = 0\n[strategy.miles-broadcast]\nbucket = \"4GiB\"\n"));
  EXPECT_EQ(own.strategy.bucketFor("miles-broadcast"), 4ull << 30);
  EXPECT_EQ(own.strategy.bucketFor("miles-p2p"), 1000000000u);
  EXPECT_DOUBLE_EQ(own.calib.lockPollSeconds, 0.0);
  auto neg = parseScenario(scenarioText("engines=2,tp=8,ep=8", 2, "lock_poll_ms = -1\n"), "t");
  ASSERT_FALSE(neg.isOk());
  EXPECT_NE(neg.status().message().find("lock_poll_ms"), std::string::npos);
  auto zero = parseScenario(
      scenarioText("engines=2,tp=8,ep=8", 2, "[strategy.miles-p2p]\nbucket = 0\n"), "t");
  EXPECT_FALSE(zero.isOk());
  auto unknown = parseScenario(
      scenarioText("engines=2,tp=8,ep=8", 2, "[strategy.miles-p2p]\nbuckett = 1\n"), "t");
  ASSERT_FALSE(unknown.isOk());
  EXPECT_NE(unknown.status().message().find("'buckett' is not a known key"), std::string::npos);
}

TEST(Scenario, WireDtypeDefaultsToWhatTheModelServes) {
  std::string t = scenarioText("engines=2,tp=8,ep=8", 2);
  t.erase(t.find("wire_dtype"), std::string("wire_dtype = \"bf16\"\n").size());
  auto bf16 = parseScenario(t, "t");
  ASSERT_TRUE(bf16.isOk()) << bf16.status().toString();
  EXPECT_FALSE(bf16->strategy.options.fp8Wire);
  t.replace(t.find("qwen3-30b-a3b"), 13, "tiny-moe");
  t.replace(t.find("tp=4,pp=2,ep=8,dp=2"), 19, "tp=2,pp=2,ep=2,dp=4");
  t.replace(t.find("engines=2,tp=8,ep=8"), 19, "engines=8,tp=2,ep=2");
  auto fp8 = parseScenario(t, "t");
  ASSERT_TRUE(fp8.isOk()) << fp8.status().toString();
  EXPECT_TRUE(fp8->strategy.options.fp8Wire);
}

TEST(Scenario, RejectsBadInput) {
  auto says = [](const std::string& text, const std::string& what) {
    auto r = parseScenario(text, "t");
    ASSERT_FALSE(r.isOk()) << text;
    EXPECT_NE(r.status().message().find(what), std::string::npos) << r.status().toString();
  };
  says("name = \"x\"\n[train]\nlayout = \"tp=1\"\n", "missing [model]");
  says("name = 1\n", "'name' must be a string");
  says("strategy = \"p2p\"\n", "'strategy' must be a table [strategy]");
  EXPECT_FALSE(parseScenario("[[[", "t").isOk());
  // More inference GPUs than the given nodes hold.
  says(scenarioText("engines=4,tp=8,ep=8", 2), "fill 4 node(s)");
  // Unknown strategies: the file parses (sim/ does not know the table), the
  // caller's check names them.
  std::string s = scenarioText("engines=2,tp=8,ep=8", 2);
  s.replace(s.find("bucket"), 0, "names = [\"smoke\"]\n");
  auto named = parseScenario(s, "t");
  ASSERT_TRUE(named.isOk()) << named.status().toString();
  auto check = harness::checkScenarioStrategies(*named);
  ASSERT_FALSE(check.isOk());
  EXPECT_NE(check.message().find("unknown strategy 'smoke'"), std::string::npos) << check.message();
  EXPECT_NE(check.message().find("miles-p2p"), std::string::npos) << check.message();
  Scenario published =
      load(scenarioText("engines=2,tp=8,ep=8", 2, "[published.broadcst]\nupdate = 1\n"));
  EXPECT_FALSE(harness::checkScenarioStrategies(published).isOk());
  // A delivery the simulator does not model is refused with the reason.
  named->strategy.names = {"store"};
  check = harness::checkScenarioStrategies(*named);
  ASSERT_FALSE(check.isOk());
  EXPECT_NE(check.message().find("does not model"), std::string::npos) << check.message();
  // Missing NIC figure.
  std::string t = scenarioText("engines=2,tp=8,ep=8", 2);
  t.replace(t.find("nic = "), std::string("nic = \"47.5GB/s\"").size(), "");
  EXPECT_FALSE(parseScenario(t, "t").isOk());
}

// What the scenario fuzzer's seeds parse to must plan (the model of the
// published p2p runs, by steps) on its nodes, or say why not: the fuzzer
// itself links the reader alone (tests/sim/fuzz/CMakeLists.txt).
TEST(Scenario, TheFuzzersSeedsThatParsePlanOrSayWhy) {
  const std::filesystem::path seeds =
      std::filesystem::path(TIDE_SOURCE_DIR) / "tests/sim/fuzz/seeds/fuzz_scenario";
  auto d = sync::findStrategy("miles-p2p");
  ASSERT_TRUE(d.isOk());
  int parsed = 0;
  for (const auto& e : std::filesystem::directory_iterator(seeds)) {
    std::ifstream in(e.path());
    std::stringstream text;
    text << in.rdbuf();
    auto sc = parseScenario(text.str(), e.path().string());
    if (!sc.isOk()) continue;
    ++parsed;
    auto p = harness::scenarioPlan(*sc, **d);
    if (!p.isOk()) {
      EXPECT_FALSE(p.status().toString().empty()) << e.path();
    }
  }
  EXPECT_GE(parsed, 2) << "the seeds hold scenarios that parse";
}

}  // namespace
}  // namespace tide::sim
