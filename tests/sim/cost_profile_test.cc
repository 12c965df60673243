// Cost profiles (profiles/*.toml): every constant labelled with its source,
// the shipped ones load, a bad label or a missing command / rows is one
// clear error, and a scenario takes its costs from its profile.

#include "sim/cost_profile.h"

#include <gtest/gtest.h>

#include "sim/scenario.h"
#include "tests/sim/small_scenario.h"

namespace tide::sim {
namespace {

std::string profileText(const std::string& hostOp) {
  std::string s = R"(name = "t"
stack = "a stack"
version = "v1"
)";
  for (const char* k : {"py_step", "engine_call", "mla_requant", "register_page", "lock_poll"})
    s += std::string("[") + k +
         "]\nvalue = 1.0\nunit = \"ms\"\nlabel = \"estimate\"\nsource = \"x\"\n";
  return s + "[host_op]\n" + hostOp;
}

TEST(CostProfile, ShippedProfilesLoadWithEveryConstantLabelled) {
  ASSERT_FALSE(profileNames().empty());
  for (const auto& name : profileNames()) {
    auto p = loadProfile(name);
    ASSERT_TRUE(p.isOk()) << name << ": " << p.status().toString();
    EXPECT_EQ(p->name, name);
    EXPECT_EQ(p->constants.size(), 6u);
    for (const auto& c : p->constants) {
      EXPECT_FALSE(c.source.empty()) << name << " " << c.key;
      if (c.label == ConstantLabel::kMicroBenchmark) {
        EXPECT_FALSE(c.command.empty()) << c.key;
      }
      if (c.label == ConstantLabel::kFittedOn) {
        EXPECT_FALSE(c.rows.empty()) << c.key;
      }
    }
  }
}

TEST(CostProfile, MilesKeepsThePublishedRunsConstants) {
  auto p = loadProfile("miles");
  ASSERT_TRUE(p.isOk()) << p.status().toString();
  EXPECT_DOUBLE_EQ(p->calib.hostOpSeconds, 10e-6);
  EXPECT_DOUBLE_EQ(p->calib.pyStepSeconds, 50e-9);
  EXPECT_DOUBLE_EQ(p->calib.engineCallSeconds, 5e-3);
  EXPECT_NEAR(p->calib.mlaRequantSeconds, 0.884 / 61, 1e-9);
  EXPECT_DOUBLE_EQ(p->calib.registerPerPageSeconds, 0.2e-6);
  EXPECT_DOUBLE_EQ(p->calib.lockPollSeconds, 0.1);
  const CostConstant* requant = p->find("mla_requant");
  ASSERT_NE(requant, nullptr);
  EXPECT_EQ(requant->label, ConstantLabel::kFittedOn) << "it comes from Kimi-K2's own figure";
  EXPECT_EQ(requant->rows, std::vector<std::string>{"kimi-k2-miles/miles-p2p/finalize"});
}

TEST(CostProfile, BadConstantsAreOneClearError) {
  auto ok = parseProfile(
      profileText("value = 10\nunit = \"us\"\nlabel = \"datasheet\"\nsource = \"s\"\n"), "t.toml");
  ASSERT_TRUE(ok.isOk()) << ok.status().toString();
  EXPECT_DOUBLE_EQ(ok->calib.hostOpSeconds, 10e-6);
  struct Case {
    const char* text;
    const char* want;
  } cases[] = {
      {"value = 1\nunit = \"us\"\nlabel = \"guess\"\nsource = \"s\"\n", "label 'guess'"},
      {"value = 1\nunit = \"us\"\nlabel = \"micro-benchmark\"\nsource = \"s\"\n",
       "names the command"},
      {"value = 1\nunit = \"us\"\nlabel = \"fitted-on\"\nsource = \"s\"\n", "names the rows"},
      {"value = 1\nunit = \"us\"\nlabel = \"estimate\"\n", "source"},
      {"value = 1\nunit = \"min\"\nlabel = \"estimate\"\nsource = \"s\"\n", "unit 'min'"},
      {"value = -1\nunit = \"us\"\nlabel = \"estimate\"\nsource = \"s\"\n", ">= 0"},
      {"value = 1\nunit = \"us\"\nlabel = \"estimate\"\nsource = \"s\"\nfudge = 2\n", "fudge"},
  };
  for (const auto& c : cases) {
    auto p = parseProfile(profileText(c.text), "t.toml");
    ASSERT_FALSE(p.isOk()) << c.want;
    EXPECT_NE(p.status().message().find(c.want), std::string::npos) << p.status().message();
    EXPECT_NE(p.status().message().find("host_op"), std::string::npos) << p.status().message();
  }
  auto missing = parseProfile("name = \"t\"\nstack = \"s\"\nversion = \"v\"\n", "t.toml");
  ASSERT_FALSE(missing.isOk());
  EXPECT_NE(missing.status().message().find("missing [host_op]"), std::string::npos);
  EXPECT_FALSE(loadProfile("no-such-profile").isOk());
}

TEST(CostProfile, AScenarioTakesItsCostsFromItsProfileAndMayOverrideThem) {
  auto sc = parseScenario(scenarioText("engines=2,tp=4,ep=4", 1), "s.toml");
  ASSERT_TRUE(sc.isOk()) << sc.status().toString();
  EXPECT_EQ(sc->profile.name, "miles");
  EXPECT_DOUBLE_EQ(sc->calib.hostOpSeconds, sc->profile.calib.hostOpSeconds);
  auto over = parseScenario(scenarioText("engines=2,tp=4,ep=4", 1,
                                         "profile = \"miles\"\nlock_poll_ms = 0\n"
                                         "[calibration]\nhost_op_us = 20\n"),
                            "s.toml");
  ASSERT_TRUE(over.isOk()) << over.status().toString();
  EXPECT_DOUBLE_EQ(over->calib.hostOpSeconds, 20e-6);
  EXPECT_DOUBLE_EQ(over->calib.lockPollSeconds, 0);
  EXPECT_DOUBLE_EQ(over->profile.calib.hostOpSeconds, 10e-6) << "the profile itself unchanged";
  auto unknown =
      parseScenario(scenarioText("engines=2,tp=4,ep=4", 1, "profile = \"nope\"\n"), "s.toml");
  ASSERT_FALSE(unknown.isOk());
  EXPECT_NE(unknown.status().message().find("cost profile 'nope'"), std::string::npos);
}

}  // namespace
}  // namespace tide::sim
