// The crossval section of `tide reproduce`: its command comes from the
// regression gate's budget file, and each row's held-out prediction is shown
// beside its in-sample one, read from the part's tide.sim.crossval/1 document.

#include "harness/reproduce/crossval_section.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#ifndef TIDE_SOURCE_DIR
#define TIDE_SOURCE_DIR "."
#endif

namespace tide::harness::reproduce {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST(CrossvalSection, ArgumentsAreTheGatesSettings) {
  std::string why;
  std::vector<std::string> a = crossvalArgs(TIDE_SOURCE_DIR, &why);
  ASSERT_TRUE(why.empty()) << why;
  ASSERT_GE(a.size(), 8u);
  EXPECT_EQ(a[0], "--profile");
  auto at = [&](const std::string& flag) {
    for (size_t i = 0; i + 1 < a.size(); ++i)
      if (a[i] == flag) return a[i + 1];
    return std::string();
  };
  EXPECT_FALSE(at("--free").empty());
  EXPECT_FALSE(at("--grid").empty());
  EXPECT_EQ(at("--scenarios"), std::string(TIDE_SOURCE_DIR) + "/scenarios/kimi-k2-miles.toml");
  EXPECT_TRUE(crossvalArgs("/nonexistent-tide-tree", &why).empty());
  EXPECT_NE(why.find("sim-crossval.toml"), std::string::npos) << why;
}

class CrossvalSectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tide-cvsec-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void part(const std::string& status, const json& doc) {
    RunRecord r;
    r.part.name = kCrossvalPart;
    const std::string path = (dir_ / "cv.json").string();
    std::ofstream(path) << doc.dump();
    r.part.documents = {{"result", path}};
    r.result.status = status;
    in_.runs.push_back(r);
  }
  static json row(const char* n, const char* s, double pub, double pred) {
    return {{"name", n},
            {"strategy", s},
            {"published_s", pub},
            {"predicted_s", pred},
            {"error", pred / pub - 1}};
  }
  static json doc() {
    return {
        {"schema", "tide.sim.crossval/1"},
        {"grid_points", 3},
        {"free", json::array({{{"key", "host_op"}}, {{"key", "engine_call"}}})},
        {"rows", json::array({row("a", "miles-broadcast", 10, 12), row("a", "miles-p2p", 2, 1.5)})},
        {"mean_abs_error", {{"broadcast", 0.2}, {"p2p", 0.25}}},
        {"max_abs_error", {{"broadcast", 0.2}, {"p2p", 0.25}}},
        {"winner_right", 1},
        {"rows_total", 1},
        {"in_sample",
         {{"rows",
           json::array({row("a", "miles-p2p", 2, 1.9), row("a", "miles-broadcast", 10, 11)})},
          {"mean_abs_error", {{"broadcast", 0.1}, {"p2p", 0.05}}},
          {"max_abs_error", {{"broadcast", 0.1}, {"p2p", 0.05}}}}}};
  }
  fs::path dir_;
  ReportInput in_;
};

TEST_F(CrossvalSectionTest, HeldOutBesideInSample) {
  part("ok", doc());
  json cv = crossvalJson(in_);
  ASSERT_TRUE(cv.is_object());
  ASSERT_EQ(cv["rows"].size(), 2u);
  const json& p2p = cv["rows"][1];
  EXPECT_EQ(p2p["strategy"], "miles-p2p");
  EXPECT_DOUBLE_EQ(p2p["held_out_s"], 1.5);
  EXPECT_DOUBLE_EQ(p2p["in_sample_s"], 1.9);  // matched by row, not by position
  EXPECT_DOUBLE_EQ(cv["held_out"]["mean_abs_error"]["p2p"], 0.25);
  EXPECT_DOUBLE_EQ(cv["in_sample"]["mean_abs_error"]["p2p"], 0.05);
  std::string md = crossvalMarkdown(cv);
  EXPECT_NE(md.find("| a | miles-p2p | 2.000 | 1.500 | -25.0 % | 1.900 | -5.0 % |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| p2p | 25.0 % | 25.0 % | 5.0 % | 5.0 % |"), std::string::npos) << md;
  EXPECT_NE(md.find("1 of 1 scenarios"), std::string::npos) << md;
}

TEST_F(CrossvalSectionTest, NothingWhenThePartFailedOrWroteAnotherSchema) {
  part("failed", doc());
  EXPECT_TRUE(crossvalJson(in_).is_null());
  EXPECT_EQ(crossvalMarkdown(crossvalJson(in_)), "");
  in_.runs.clear();
  json other = doc();
  other["schema"] = "tide.sim.report/1";
  part("ok", other);
  EXPECT_TRUE(crossvalJson(in_).is_null());
}

}  // namespace
}  // namespace tide::harness::reproduce
