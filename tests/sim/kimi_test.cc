// The headline reproduction: scenarios/kimi-k2-miles.toml against the
// published Kimi-K2 figures (docs/sources.md): broadcast 53.3 s and p2p 7.2 s,
// each within 15 %, ratio 6.4-8.4; and each simulation under 10 s of CPU.
// The same write-up published seven more configurations
// (scenarios/published/).
//
// Every row is checked against results/budgets/sim-accuracy.toml: its
// prediction is pinned (a moved prediction fails), and its error must be
// within its target or, for a known gap (docs/sim.md, docs/sim-published.md),
// no worse than the budget recorded there. A miss never skips. The checks
// that must hold whatever the gaps (broadcast within 15 % of the RFC and 30 %
// of the table, p2p beats broadcast and is not below its own lower bound,
// both run fast) stay as they were.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "sim/report.h"
#include "sim/scenario.h"
#include "sim/simulator.h"
#include "tests/sanitizers.h"
#include "tests/sim/accuracy_budget.h"
#include "tests/sim/small_scenario.h"

#ifndef TIDE_SOURCE_DIR
#define TIDE_SOURCE_DIR "."
#endif

namespace tide::sim {
namespace {

constexpr double kBroadcast = 53.279;   // the write-up's table
constexpr double kBroadcastRfc = 43.0;  // the design RFC, radixark/miles issue #755
constexpr double kP2p = 7.227;

Scenario kimi() {
  auto sc = loadScenario(std::string(TIDE_SOURCE_DIR) + "/scenarios/kimi-k2-miles.toml");
  if (!sc.isOk()) throw StatusError(sc.status());
  return std::move(sc).value();
}

TEST(KimiK2, BroadcastWithin15PercentOfTheRfcAnd30OfTheTable) {
  auto b = simulate(kimi(), "miles-broadcast");
  ASSERT_TRUE(b.isOk()) << b.status().toString();
  EXPECT_NEAR(b->seconds, kBroadcastRfc, 0.15 * kBroadcastRfc);
  EXPECT_NEAR(b->seconds, kBroadcast, 0.30 * kBroadcast);
}

TEST(KimiK2, P2pBeatsBroadcastAndRespectsItsLowerBound) {
  auto b = simulate(kimi(), "miles-broadcast");
  auto p = simulate(kimi(), "miles-p2p");
  ASSERT_TRUE(b.isOk() && p.isOk());
  printStrategyResult(*p, kimi());
  EXPECT_LT(p->seconds, b->seconds);
  EXPECT_GE(p->seconds, p->lowerBoundSeconds);
}

TEST(KimiK2, EachSimulationUnderTenSeconds) {
  if (tide::testing::kAnySanitizer)
    GTEST_SKIP() << "skipped: a sanitizer build simulates several times slower (asan measured "
                    "26 s); the default build checks the 10 s bound";
  for (const char* strategy : {"miles-broadcast", "miles-p2p"}) {
    auto r = simulate(kimi(), strategy);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    EXPECT_LT(r->wallSeconds, 10.0) << strategy;
  }
}

// The published p2p time in its spans (docs/sources.md). The finalization
// is post-processing whose rate (mla_requant_ms, fitted-on kimi-k2) comes
// from the same documentation's ~884 ms: its agreement is by construction and
// is not validation. It checks only that the split puts the post-processing
// and the closing rounds there; the transfer span is a budgeted row.
TEST(KimiK2, P2pFinalizeSpanAgreesByConstruction) {
  Scenario sc = kimi();
  auto p = simulate(sc, "miles-p2p");
  ASSERT_TRUE(p.isOk());
  int spans = 0;
  for (const auto& pub : sc.published) {
    if (pub.strategy != "miles-p2p" || pub.span.empty()) continue;
    ++spans;
    double sim = p->spanSeconds(pub.span);
    std::printf("p2p %-8s simulated %.3f s, published %.3f s, error %+.1f %%\n", pub.span.c_str(),
                sim, pub.seconds, (sim / pub.seconds - 1) * 100);
    if (pub.span == "finalize") {
      EXPECT_NEAR(sim, pub.seconds, 0.15 * pub.seconds);
    }
  }
  EXPECT_EQ(spans, 2) << "scenarios/kimi-k2-miles.toml gives p2p_transfer and p2p_finalize";
}

// Every published figure of the headline and of the further rows (whole
// updates and spans; not the labelled alternatives), simulated once.
struct Row {
  std::string scenario, strategy, span;
  double simulated = 0, published = 0;
  bool sharedNode = false;  // the engines share the training nodes
  bool headline = false;
  double error() const { return simulated / published - 1; }
  std::string key() const { return scenario + "/" + strategy + (span.empty() ? "" : "/" + span); }
};

const std::vector<Row>& allRows() {
  static const std::vector<Row> rows = [] {
    std::vector<std::string> files = {std::string(TIDE_SOURCE_DIR) +
                                      "/scenarios/kimi-k2-miles.toml"};
    for (const auto& entry :
         std::filesystem::directory_iterator(std::string(TIDE_SOURCE_DIR) + "/scenarios/published"))
      files.push_back(entry.path().string());
    std::vector<Row> out;
    for (const auto& file : files) {
      auto sc = loadScenario(file);
      if (!sc.isOk()) throw StatusError(sc.status());
      for (const auto& p : sc->published) {
        if (!p.label.empty()) continue;
        auto r = simulate(*sc, p.strategy);
        if (!r.isOk()) throw StatusError(r.status());
        const double sim = p.span.empty() ? r->seconds : r->spanSeconds(p.span);
        out.push_back({sc->name, p.strategy, p.span, sim, p.seconds, sc->sharesTrainNodes(),
                       out.empty() || out.front().scenario == sc->name});
        std::printf("%-34s simulated %8.4f s, published %7.3f s, error %+6.1f %%\n",
                    out.back().key().c_str(), sim, p.seconds, out.back().error() * 100);
      }
    }
    return out;
  }();
  return rows;
}

const testing::AccuracyBudgets& budgets() {
  static const testing::AccuracyBudgets b = [] {
    auto r =
        testing::loadBudgets(std::string(TIDE_SOURCE_DIR) + "/results/budgets/sim-accuracy.toml");
    if (!r.isOk()) throw StatusError(r.status());
    return std::move(r).value();
  }();
  return b;
}

// Every row: prediction pinned, error within its target or its budget.
TEST(Accuracy, EveryRowWithinItsTargetOrNoWorseThanItsBudget) {
  int judged = 0;
  for (const Row& r : allRows()) {
    const testing::RowBudget* b = budgets().find(r.key());
    if (b == nullptr) {
      EXPECT_TRUE(budgets().isByConstruction(r.key()))
          << r.key() << " has no row in results/budgets/sim-accuracy.toml";
      continue;
    }
    std::string note;
    EXPECT_EQ(testing::judgeRow(*b, r.simulated, r.published, &note), "");
    if (!note.empty()) std::printf("%s\n", note.c_str());
    ++judged;
  }
  EXPECT_EQ(judged, static_cast<int>(budgets().rows.size())) << "a budget row names no figure";
}

TEST(Accuracy, KimiRatioWithinItsTargetOrNoWorseThanItsBudget) {
  auto b = simulate(kimi(), "miles-broadcast");
  auto p = simulate(kimi(), "miles-p2p");
  ASSERT_TRUE(b.isOk() && p.isOk());
  std::string note;
  EXPECT_EQ(testing::judgeRatio(budgets(), b->seconds / p->seconds, &note), "");
  if (!note.empty()) std::printf("%s\n", note.c_str());
}

// The judgement can fail: a row past its budget, a moved prediction, a row
// past its target without a budget, a ratio past its budget.
TEST(Accuracy, TheJudgementFailsWhenARowGetsWorse) {
  testing::RowBudget b{"s", "miles-p2p", "", 10.0, 0.15, 0.30};
  EXPECT_EQ(testing::judgeRow(b, 10.0, 12.0, nullptr), "") << "within target";
  std::string note;
  EXPECT_EQ(testing::judgeRow(b, 10.0, 7.8, &note), "") << "within budget";
  EXPECT_NE(note, "");
  EXPECT_NE(testing::judgeRow(b, 10.0, 7.5, nullptr), "") << "past its budget";
  EXPECT_NE(testing::judgeRow(b, 10.06, 10.0, nullptr), "") << "moved 0.6 %";
  b.budget.reset();
  EXPECT_NE(testing::judgeRow(b, 10.0, 7.8, nullptr), "") << "past target, no budget";
  testing::AccuracyBudgets a;
  a.ratioLow = 6.4;
  a.ratioHigh = 8.4;
  a.ratioBudget = 10.3;
  EXPECT_EQ(testing::judgeRatio(a, 7.0, nullptr), "");
  EXPECT_EQ(testing::judgeRatio(a, 10.2, nullptr), "");
  EXPECT_NE(testing::judgeRatio(a, 10.4, nullptr), "");
  EXPECT_NE(testing::judgeRatio(a, 5.0, nullptr), "");
}

// Must hold, over the rows whose broadcast crosses the fabric (engines on
// nodes of their own): the mean |error| within 25 % and every row within
// 60 % (Qwen3-235B-A22B's published time needs 92 % of one NIC's rate
// through its stage heads for the whole update; docs/sim-published.md). The one row
// whose broadcast stays inside a host (GLM-Z1-9B, NVLink) is a known gap
// with its own budget.
TEST(Published, FabricBroadcastMeanErrorWithin25PercentAndNoRowPast60) {
  int n = 0;
  double sum = 0;
  for (const Row& r : allRows()) {
    if (r.strategy != "miles-broadcast" || !r.span.empty() || r.headline || r.sharedNode) continue;
    EXPECT_LT(std::abs(r.error()), 0.60) << r.key();
    sum += std::abs(r.error());
    ++n;
  }
  ASSERT_EQ(n, 6);
  EXPECT_LT(sum / n, 0.25);
}

TEST(Scenarios, EveryShippedScenarioLoads) {
  for (const char* f : {"kimi-k2-miles", "kimi-k2-4096", "example-custom-moe", "qwen3-30b-small-ep",
                        "deepseek-v3-h800-roce"}) {
    auto sc = loadScenario(std::string(TIDE_SOURCE_DIR) + "/scenarios/" + f + ".toml");
    EXPECT_TRUE(sc.isOk()) << f << ": " << sc.status().toString();
  }
}

}  // namespace
}  // namespace tide::sim
