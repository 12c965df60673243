// The regression gate's parts without running anything: the budgets file
// (read, --update's rewrite, bad input), the verdicts and their causes, and
// reading a callgrind dump.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/regress/budgets.h"
#include "harness/regress/callgrind.h"
#include "harness/regress/gate.h"

namespace tide::harness::regress {
namespace {

class TempFile {
 public:
  explicit TempFile(const std::string& text) {
    path_ = (std::filesystem::temp_directory_path() /
             ("regress_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++)))
                .string();
    std::ofstream(path_) << text;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }
  std::string read() const {
    std::ifstream in(path_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

 private:
  static inline int counter_ = 0;
  std::string path_;
};

const char* kHand =
    "# hand-written\n"
    "[instructions]\n"
    "tolerance_percent = 3\n"
    "kernels = [\"k1\", \"k2\"]\n"
    "\n"
    "[sim]\n"
    "scenarios = [\"scenarios/x.toml\"]\n"
    "\n"
    "[[plan]]\n"
    "name = \"small\"\n"
    "model = \"tiny-moe\"\n"
    "train = \"tp=2\"\n"
    "infer = \"engines=1,tp=2\"\n"
    "cluster = \"h100-ib-8x400\"\n"
    "strategy = \"p2p\"\n";

const char* kGenerated =
    "\n[metrics.ir]\n"
    "k1 = [1000, 3]\n"
    "k2 = [2000, 5]\n"
    "\n[metrics.sim.x.p2p]\n"
    "update_s = [1.25, 0]\n"
    "\n[inputs.sim.x]\n"
    "cluster = \"aaaa\"\n"
    "model = \"bbbb\"\n"
    "\n[profile.k1]\n"
    "f01 = [\"hot(int)\", 800]\n"
    "f02 = [\"cold()\", 150]\n";

TEST(Budgets, ReadsHandWrittenAndGeneratedParts) {
  TempFile f(std::string(kHand) + kGenerated);
  Budgets b = orThrow(loadBudgets(f.path()));
  EXPECT_EQ(b.handWritten, kHand);
  EXPECT_EQ(b.irTolerancePercent, 3);
  EXPECT_EQ(b.kernels, (std::vector<std::string>{"k1", "k2"}));
  ASSERT_EQ(b.plans.size(), 1u);
  EXPECT_EQ(b.plans[0].model, "tiny-moe");
  ASSERT_EQ(b.metrics.size(), 3u);
  EXPECT_EQ(*b.metrics.at("ir.k2").baseline, 2000);
  EXPECT_EQ(b.metrics.at("ir.k2").tolerancePercent, 5);
  EXPECT_EQ(*b.metrics.at("sim.x.p2p.update_s").baseline, 1.25);
  EXPECT_EQ(b.inputs.at("sim.x").at("cluster"), "aaaa");
  EXPECT_EQ(b.profile.at("k1").at("hot(int)"), 800);
}

TEST(Budgets, RewriteKeepsTheHandWrittenPartAndReadsBackExactly) {
  TempFile f(std::string(kHand) + kGenerated);
  Budgets b = orThrow(loadBudgets(f.path()));
  b.metrics["sim.x.p2p.update_s"].baseline = 0.1 + 0.2;  // not a short decimal
  b.metrics["plan.small.network_bytes"] = MetricBudget{123456789012.0, 0};
  b.profile["k1"]["std::vector<int, std::allocator<int> >::push_back(int const&)"] = 5;
  orThrow(writeBudgets(b, f.path()));
  const std::string text = f.read();
  EXPECT_EQ(text.substr(0, std::string(kHand).size()), kHand);
  Budgets r = orThrow(loadBudgets(f.path()));
  EXPECT_EQ(*r.metrics.at("sim.x.p2p.update_s").baseline, 0.1 + 0.2);
  EXPECT_EQ(*r.metrics.at("plan.small.network_bytes").baseline, 123456789012.0);
  EXPECT_EQ(r.metrics.at("ir.k2").tolerancePercent, 5);
  EXPECT_EQ(r.profile.at("k1").size(), 3u);
  // A second rewrite of what was read is the same file.
  orThrow(writeBudgets(r, f.path()));
  EXPECT_EQ(f.read(), text);
}

TEST(Budgets, BadInputIsOneClearError) {
  for (const std::string& text :
       {std::string("[instructions]\ntolerance_percent = -1\n"),
        std::string("[instructions]\nkernel = [\"a\"]\n"),  // unknown key
        std::string("[metrics.ir]\nk1 = 5\n"),              // not [baseline, tolerance]
        std::string("[metrics.ir]\nk1 = [5]\n"), std::string("[[plan]]\nname = \"x\"\n"),
        std::string("[sim]\nscenarios = \"one\"\n"), std::string("bogus = 1\n")}) {
    TempFile f(text);
    auto b = loadBudgets(f.path());
    ASSERT_FALSE(b.isOk()) << text;
    EXPECT_EQ(b.status().code(), Code::kInvalidArgument) << text;
    EXPECT_NE(b.status().message().find(f.path()), std::string::npos) << b.status().message();
  }
  EXPECT_EQ(loadBudgets("/nonexistent/regressions.toml").status().code(), Code::kNotFound);
}

Budgets sample() {
  Budgets b;
  b.irTolerancePercent = 3;
  b.metrics["ir.k1"] = MetricBudget{1000, 3};
  b.metrics["sim.x.p2p.update_s"] = MetricBudget{1.25, 0};
  b.metrics["plan.small.moves"] = MetricBudget{40, 0};
  b.inputs["sim.x"] = {{"cluster", "aaaa"}, {"model", "bbbb"}};
  b.profile["k1"] = {{"hot(int)", 800}, {"cold()", 150}};
  return b;
}

const GateRow& row(const std::vector<GateRow>& rows, const std::string& name) {
  for (const auto& r : rows)
    if (r.name == name) return r;
  throw std::runtime_error("no row " + name);
}

auto all = [](const std::string&) { return true; };

TEST(Gate, InstructionsFailAboveTheToleranceOnly) {
  Budgets b = sample();
  Measurement m;
  m.figures = {
      {"ir.k1", "Ir", 1029}, {"sim.x.p2p.update_s", "s", 1.25}, {"plan.small.moves", "moves", 40}};
  m.inputs["sim.x"] = b.inputs["sim.x"];
  auto rows = judge(b, m, all);
  for (const auto& r : rows) EXPECT_EQ(r.verdict, Verdict::kOk) << r.name;

  m.figures[0].value = 1031;  // +3.1 %
  m.profile["k1"] = {{"hot(int)", 831}, {"cold()", 150}, {"other", 50}};
  rows = judge(b, m, all);
  const GateRow& k = row(rows, "ir.k1");
  EXPECT_EQ(k.verdict, Verdict::kRegressed);
  EXPECT_TRUE(fails(k.verdict));
  EXPECT_NEAR(k.changePercent, 3.1, 1e-9);
  EXPECT_NE(k.cause.find("hot(int) +31 Ir (+3.9%)"), std::string::npos) << k.cause;

  m.figures[0].value = 900;  // 10 % fewer: reported, not a failure
  rows = judge(b, m, all);
  EXPECT_EQ(row(rows, "ir.k1").verdict, Verdict::kImproved);
  EXPECT_FALSE(fails(Verdict::kImproved));
}

TEST(Gate, InstructionsNameAnotherBuildEnvironment) {
  Budgets b = sample();
  b.inputs[kEnvironmentSource] = {{"cpu", "A"}, {"compiler", "gcc 12.2.0"}};
  Measurement m;
  m.figures = {{"ir.k1", "Ir", 1200}};
  m.inputs[kEnvironmentSource] = {{"cpu", "B"}, {"compiler", "gcc 12.2.0"}};
  auto only = [](const std::string& n) { return n == "ir.k1"; };
  auto rows = judge(b, m, only);
  EXPECT_EQ(row(rows, "ir.k1").verdict, Verdict::kRegressed);
  EXPECT_EQ(row(rows, "ir.k1")
                .cause.rfind(
                    "the baselines were recorded in another build environment (cpu: A -> B): ", 0),
            0u)
      << row(rows, "ir.k1").cause;
  m.inputs[kEnvironmentSource]["cpu"] = "A";  // the same environment: no such note
  rows = judge(b, m, only);
  EXPECT_EQ(row(rows, "ir.k1").cause.find("another build environment"), std::string::npos);
}

TEST(Gate, DeterministicFiguresFailOnAnyChangeWithTheirCause) {
  Budgets b = sample();
  Measurement m;
  m.figures = {{"sim.x.p2p.update_s", "s", 1.25 * (1 + 1e-12)}, {"plan.small.moves", "moves", 41}};
  m.inputs["sim.x"] = {{"cluster", "cccc"}, {"model", "bbbb"}};
  auto selected = [](const std::string& n) { return n.rfind("ir.", 0) != 0; };
  auto rows = judge(b, m, selected);
  EXPECT_EQ(row(rows, "sim.x.p2p.update_s").verdict, Verdict::kOk);  // rounding only
  const GateRow& moves = row(rows, "plan.small.moves");
  EXPECT_EQ(moves.verdict, Verdict::kChanged);
  EXPECT_NE(moves.cause.find("no recorded input digests for plan.small"), std::string::npos);

  m.figures[0].value = 1.26;
  rows = judge(b, m, selected);
  const GateRow& sim = row(rows, "sim.x.p2p.update_s");
  EXPECT_EQ(sim.verdict, Verdict::kChanged);
  EXPECT_EQ(sim.cause, "inputs of sim.x changed: cluster");
  m.figures[0].value = 1.24;  // lower is a change too
  m.inputs["sim.x"] = b.inputs["sim.x"];
  rows = judge(b, m, selected);
  EXPECT_EQ(row(rows, "sim.x.p2p.update_s").verdict, Verdict::kChanged);
  EXPECT_EQ(row(rows, "sim.x.p2p.update_s").cause,
            "inputs of sim.x unchanged: the code changed the result");
  // ir.k1 was not selected: not reported missing.
  for (const auto& r : rows) EXPECT_NE(r.name, "ir.k1");
}

TEST(Gate, MissingAndNewMetricsFail) {
  Budgets b = sample();
  Measurement m;
  m.figures = {{"ir.k1", "Ir", 1000}, {"ir.k9", "Ir", 5}, {"plan.small.moves", "moves", 40}};
  auto rows = judge(b, m, all);
  EXPECT_EQ(row(rows, "ir.k9").verdict, Verdict::kNew);
  EXPECT_EQ(row(rows, "sim.x.p2p.update_s").verdict, Verdict::kMissing);
  EXPECT_TRUE(fails(Verdict::kNew));
  EXPECT_TRUE(fails(Verdict::kMissing));

  Budgets u = updated(b, m, all);
  EXPECT_EQ(*u.metrics.at("ir.k9").baseline, 5);
  EXPECT_EQ(u.metrics.at("ir.k9").tolerancePercent, 3);  // the [instructions] default
  EXPECT_EQ(u.metrics.count("sim.x.p2p.update_s"), 0u);  // gone from the code, gone here
}

TEST(Callgrind, ReadsADumpsTotalsAndSelfCosts) {
  TempFile f(
      "version: 1\ncreator: callgrind-3.19.0\npid: 1\ncmd: x\npart: 1\n\n"
      "desc: I1 cache: \ndesc: Timerange: Basic block 0 - 10\n"
      "desc: Trigger: Client Request: delta_encode\n\n"
      "positions: line\nevents: Ir\nsummary: 1500\n\n"
      "ob=(1) /x\nfl=(1) a.cc\nfn=(1) outer()\n10 100\n+2 50\ncfn=(2) inner(int)\ncalls=3 20\n"
      "12 1300\n\nfn=(2)\n20 1000\n* 300\n\nfn=(1)\n14 50\n\ntotals: 1500\n");
  KernelCount k = orThrow(readCallgrindDump(f.path()));
  EXPECT_EQ(k.kernel, "delta_encode");
  EXPECT_EQ(k.creator, "callgrind-3.19.0");
  EXPECT_EQ(k.instructions, 1500);
  EXPECT_EQ(k.functions.at("outer()"), 200);  // 100 + 50 + 50; the call's 1300 is inclusive
  EXPECT_EQ(k.functions.at("inner(int)"), 1300);
  TempFile bad("events: Dr\nsummary: 5\n");
  EXPECT_FALSE(readCallgrindDump(bad.path()).isOk());
  TempFile none("events: Ir\n");
  EXPECT_FALSE(readCallgrindDump(none.path()).isOk());
}

}  // namespace
}  // namespace tide::harness::regress
