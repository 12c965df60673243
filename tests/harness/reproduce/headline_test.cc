// The headline of `tide reproduce` from the parts' documents: every figure is
// read from them (verification included), a side that did not run is null
// beside its reason, and the table says the same as summary.json.

#include "harness/reproduce/headline.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace tide::harness::reproduce {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class HeadlineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tide-headline-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    in_.published = {{"miles-broadcast", "", "", 53.279},
                     {"miles-p2p", "", "", 7.227},
                     {"miles-p2p", "", "transfer", 6.29}};
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A part that ended with `status` and wrote `doc` (null: nothing).
  void part(const std::string& name, const std::string& status, const json& doc,
            const std::string& reason = "") {
    RunRecord r;
    r.part.name = name;
    if (!doc.is_null()) {
      const std::string path = (dir_ / (name + ".json")).string();
      std::ofstream(path) << doc.dump();
      r.part.documents = {{"result", path}};
    }
    r.result.status = status;
    r.result.reason = reason;
    in_.runs.push_back(r);
  }

  static json syncDoc(double s1, double s2, double bound, uint64_t bytes, const char* outcome) {
    json steps = json::array();
    for (double s : {s1, s2})
      steps.push_back({{"seconds", s}, {"bytes", bytes}, {"local_bytes", 100}});
    return {{"schema", "tide.sync/1"},
            {"steps", steps},
            {"median_step_seconds", std::max(s1, s2)},
            {"lower_bound_seconds", bound},
            {"bottleneck", "node 1 nic 0 tx"},
            {"verified", std::string(outcome) == "bit-exact"},
            {"verification", {{"outcome", outcome}, {"verified_bytes", 2 * bytes - 7}}}};
  }
  static json simDoc(double seconds, uint64_t planBytes) {
    return {{"schema", "tide.sim.report/1"},
            {"inputs", {{"plan_bytes", planBytes}, {"host_tcp_gbps", 1.5}}},
            {"results", json::array({{{"seconds", seconds}, {"lower_bound_seconds", 1.0}}})}};
  }
  void simulatedParts() {
    part("headline_sim_broadcast", "ok", simDoc(11.0, 1100));
    part("headline_sim_p2p", "ok", simDoc(6.0, 300));
    part("sim_kimi_broadcast", "ok", simDoc(45.0, 0));
    part("sim_kimi_p2p", "ok", simDoc(4.5, 0));
  }

  fs::path dir_;
  ReportInput in_;
};

TEST_F(HeadlineTest, RealRunsBesideTheirBoundsAndPredictions) {
  part("headline_sync_broadcast", "ok", syncDoc(12.5, 13.0, 10.0, 1000, "bit-exact"));
  part("headline_sync_p2p", "ok", syncDoc(6.5, 6.25, 5.0, 200, "bit-exact"));
  simulatedParts();
  json h = headlineJson(in_);
  const json& r = h["real"];
  ASSERT_TRUE(r.is_object()) << h.dump(2);
  EXPECT_EQ(h["real_status"], "ok");
  EXPECT_DOUBLE_EQ(r["broadcast_s"].get<double>(), 13.0);
  EXPECT_DOUBLE_EQ(r["p2p_s"].get<double>(), 6.5);
  EXPECT_DOUBLE_EQ(r["speedup"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(r["bound_speedup"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(r["ratio_to_bound"]["broadcast"].get<double>(), 1.3);
  EXPECT_EQ(r["steps_s"]["p2p"], json({6.5, 6.25}));
  EXPECT_EQ(r["verification"]["broadcast"], "bit-exact");
  EXPECT_EQ(r["verified_bytes"]["p2p"], 393u);  // as the run wrote it
  EXPECT_EQ(r["verified"], true);
  const json& sim = h["sim_same_cluster"];
  EXPECT_DOUBLE_EQ(sim["broadcast_s"].get<double>(), 11.0);
  // Checked as tide validate checks it: the run moved the plan's bytes.
  EXPECT_EQ(sim["validation"]["p2p"]["steps"].size(), 2u) << sim.dump(2);
  EXPECT_DOUBLE_EQ(h["sim_full_scale"]["p2p_s"].get<double>(), 4.5);
  EXPECT_DOUBLE_EQ(h["published"]["broadcast_s"].get<double>(), 53.279);
  EXPECT_DOUBLE_EQ(h["published"]["p2p_s"].get<double>(), 7.227);

  std::string md = headlineMarkdown(h);
  EXPECT_EQ(md.rfind("## Headline", 0), 0u) << md;
  EXPECT_NE(md.find("| **real run, measured** | 13.000 s | 6.500 s | **2.00×** |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| 11.000 s (-15.4 % vs real) | 6.000 s (-7.7 % vs real) |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| published, full-scale Kimi-K2 | 53.279 s | 7.227 s | 7.37× |"),
            std::string::npos)
      << md;
}

TEST_F(HeadlineTest, VerificationIsTheRunsOwn) {
  // A document that says its data was incomplete is shown as such.
  part("headline_sync_broadcast", "ok", syncDoc(12.0, 12.0, 10.0, 1000, "bit-exact"));
  part("headline_sync_p2p", "ok", syncDoc(6.0, 6.0, 5.0, 200, "incomplete"));
  simulatedParts();
  json h = headlineJson(in_);
  EXPECT_EQ(h["real"]["verification"]["p2p"], "incomplete");
  EXPECT_EQ(h["real"]["verified"], false);
  EXPECT_NE(headlineMarkdown(h).find("| bit-exact | incomplete |"), std::string::npos);
}

TEST_F(HeadlineTest, SkippedRunIsNullBesideItsReason) {
  part("headline_sync_broadcast", "skipped", nullptr, "needs root to create network namespaces");
  part("headline_sync_p2p", "skipped", nullptr, "needs root to create network namespaces");
  simulatedParts();
  json h = headlineJson(in_);
  EXPECT_TRUE(h["real"].is_null());
  EXPECT_EQ(h["real_status"], "skipped");
  EXPECT_NE(h["real_reason"].get<std::string>().find("needs root"), std::string::npos);
  // The predictions stand without the run; there is nothing to check them against.
  EXPECT_DOUBLE_EQ(h["sim_same_cluster"]["p2p_s"].get<double>(), 6.0);
  EXPECT_FALSE(h["sim_same_cluster"].contains("validation"));
  std::string md = headlineMarkdown(h);
  EXPECT_NE(md.find("| **real run, measured** | skipped: headline_sync_broadcast skipped: needs "
                    "root to create network namespaces |"),
            std::string::npos)
      << md;
}

TEST_F(HeadlineTest, FailedRunKeepsItsVerificationOutcome) {
  part("headline_sync_broadcast", "ok", syncDoc(12.0, 12.0, 10.0, 1000, "bit-exact"));
  part("headline_sync_p2p", "failed",
       {{"schema", "tide.sync/1"},
        {"error", "shard differs"},
        {"verified", false},
        {"verification", {{"outcome", "not bit-exact"}}}},
       "exit 1: shard differs");
  json h = headlineJson(in_);
  EXPECT_TRUE(h["real"].is_null());
  EXPECT_EQ(h["real_status"], "failed");
  EXPECT_EQ(h["real_verification"]["outcome"], "not bit-exact");
  EXPECT_TRUE(h["sim_same_cluster"].is_null());
  EXPECT_NE(h["sim_same_cluster_reason"].get<std::string>().find("not run"), std::string::npos);
}

TEST_F(HeadlineTest, PredictionOfAnotherPlanIsRefused) {
  part("headline_sync_broadcast", "ok", syncDoc(12.0, 12.0, 10.0, 1000, "bit-exact"));
  part("headline_sync_p2p", "ok", syncDoc(6.0, 6.0, 5.0, 200, "bit-exact"));
  part("headline_sim_broadcast", "ok", simDoc(11.0, 1100));
  part("headline_sim_p2p", "ok", simDoc(6.0, 999));  // not the bytes the run moved
  json h = headlineJson(in_);
  const json& v = h["sim_same_cluster"]["validation"];
  ASSERT_TRUE(v["p2p"].contains("refused")) << v.dump(2);
  EXPECT_NE(v["p2p"]["refused"].get<std::string>().find("bytes"), std::string::npos);
  EXPECT_NE(headlineMarkdown(h).find("but the plan moves"), std::string::npos);
}

}  // namespace
}  // namespace tide::harness::reproduce
