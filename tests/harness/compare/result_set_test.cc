#include "harness/compare/result_set.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace tide::harness {
namespace {

namespace fs = std::filesystem;

class ResultSetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tide-rs-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    auto p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }
  fs::path dir_;
};

TEST_F(ResultSetTest, ReadsGoogleBenchmarkRepetitions) {
  auto p = write("gb.json", R"({"benchmarks":[
    {"name":"BM_x/repeats:2","run_name":"BM_x","run_type":"iteration","real_time":10,"time_unit":"ns","bytes_per_second":5},
    {"name":"BM_x/repeats:2","run_name":"BM_x","run_type":"iteration","real_time":12,"time_unit":"ns","bytes_per_second":4},
    {"name":"BM_x_mean","run_name":"BM_x","run_type":"aggregate","real_time":11}]})");
  auto s = loadResultSet(p);
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  EXPECT_EQ(s->metrics.at("BM_x/real_time").values, (std::vector<double>{10, 12}));
  EXPECT_TRUE(s->metrics.at("BM_x/bytes_per_second").higherIsBetter);
}

TEST_F(ResultSetTest, ReadsTideSamplesAndDirectories) {
  write(
      "a.json",
      R"({"schema":"tide.bench.transport/1","samples":{"gbps":{"values":[1,2],"unit":"gbps","better":"higher"}}})");
  write("b.json", R"({"schema":"x","summary":1})");  // no samples: skipped in a directory
  auto s = loadResultSet(dir_.string());
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  ASSERT_EQ(s->metrics.count("a:gbps"), 1u);
  EXPECT_TRUE(s->metrics.at("a:gbps").higherIsBetter);
}

TEST_F(ResultSetTest, BadFilesGiveOneClearError) {
  EXPECT_EQ(loadResultSet(write("bad.json", "{not json")).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(loadResultSet((dir_ / "none.json").string()).status().code(), Code::kNotFound);
  auto s = loadResultSet(write("c.json", R"({"samples":{"m":{"values":[1,"x"]}}})"));
  EXPECT_NE(s.status().message().find("non-number"), std::string::npos);
  auto d = loadResultSet(write("d.json", R"({"samples":{"m":{"values":[1],"better":"up"}}})"));
  EXPECT_FALSE(d.isOk());
}

}  // namespace
}  // namespace tide::harness
