// The matrix's figures over its rows: |error| median, p90 (nearest rank) and
// max over the rows that ran, and the faster-strategy check.

#include <gtest/gtest.h>

#include "harness/validation/matrix_run.h"

namespace tide::harness {
namespace {

MatrixResult row(const std::string& config, const std::string& strategy, double real, double sim,
                 const std::string& status = "ok") {
  MatrixResult r;
  r.row.config = config;
  r.row.strategy = strategy;
  r.row.backend = "tcp";
  r.status = status;
  r.realSeconds = real;
  r.simSeconds = sim;
  r.error = sim / real - 1;
  return r;
}

TEST(MatrixSummary, ErrorsOverTheRowsThatRan) {
  std::vector<MatrixResult> rows;
  // |errors| 1 %, 2 %, ..., 10 %, and one failed row and one skipped row.
  for (int i = 1; i <= 10; ++i)
    rows.push_back(row("c" + std::to_string(i), "p2p", 1.0, 1 - i / 100.0));
  rows.push_back(row("f", "p2p", 0, 0, "failed"));
  rows.push_back(row("s", "p2p", 0, 0, "skipped"));
  MatrixSummary s = summarize(rows);
  EXPECT_EQ(12u, s.total);
  EXPECT_EQ(10u, s.ok);
  EXPECT_EQ(1u, s.failed);
  EXPECT_EQ(1u, s.skipped);
  EXPECT_NEAR(0.05, s.median, 1e-12);  // nearest rank: the 5th of 10
  EXPECT_NEAR(0.09, s.p90, 1e-12);     // the 9th of 10
  EXPECT_NEAR(0.10, s.max, 1e-12);
}

TEST(MatrixSummary, TheFasterStrategyIsCheckedWhereTheRealRunsDiffer) {
  std::vector<MatrixResult> rows{// Real: p2p 20 % faster; simulated: broadcast faster -> wrong.
                                 row("a", "broadcast", 1.2, 0.9), row("a", "p2p", 1.0, 1.0),
                                 // Real: 5 % apart -> not checked, whatever the simulator says.
                                 row("b", "broadcast", 1.05, 2.0), row("b", "p2p", 1.0, 1.0),
                                 // Real and simulated agree.
                                 row("c", "broadcast", 2.0, 1.9), row("c", "p2p", 1.0, 1.1)};
  MatrixSummary s = summarize(rows);
  EXPECT_EQ(2u, s.winnerChecks);
  ASSERT_EQ(1u, s.wrongWinner.size());
  EXPECT_EQ("a/tcp", s.wrongWinner[0]);
}

TEST(MatrixSummary, TheJsonCarriesTheSchemaAndTheFigures) {
  MatrixFile m{"m.toml", {}};
  std::vector<MatrixResult> rows{row("a", "p2p", 2.0, 1.9)};
  rows[0].realSteps = {2.0, 2.1, 1.9};
  HostFigures h;
  nlohmann::json j = matrixJson(m, rows, summarize(rows), h);
  EXPECT_EQ("tide.validate.matrix/1", j["schema"]);
  EXPECT_EQ(1, j["rows_total"]);
  EXPECT_NEAR(-0.05, j["rows"][0]["error"].get<double>(), 1e-12);
  EXPECT_NEAR(0.0, j["rows"][0]["fastest_error"].get<double>(), 1e-12);  // 1.9 / 1.9 - 1
  EXPECT_NE(std::string::npos, matrixMarkdown(j).find("| a/p2p/tcp |"));
}

}  // namespace
}  // namespace tide::harness
