// The crossval regression gate: leave-one-out over the published rows with
// the free constants, grid and scenarios recorded in
// results/budgets/sim-crossval.toml, failing when a strategy's mean or max
// held-out |error| gets worse than recorded plus the tolerance (2 points),
// or fewer winners come out right. A fitted profile's held-out error is what
// counts (the calibration rule); the in-sample one is not checked here.

#include "harness/sim/crossval.h"

#include <gtest/gtest.h>
#include <toml++/toml.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sim/cost_profile.h"

#ifndef TIDE_SOURCE_DIR
#define TIDE_SOURCE_DIR "."
#endif

namespace tide::harness {
namespace {

const std::string kRoot = TIDE_SOURCE_DIR;

struct Budget {
  std::string profile;
  std::vector<std::string> scenarios, free;
  int grid = 0, winnerRight = 0;
  double tolerance = 0;
  std::map<std::string, double> mean, max;
};

Budget loadBudget() {
  toml::table t = toml::parse_file(kRoot + "/results/budgets/sim-crossval.toml");
  Budget b;
  b.profile = t["profile"].value_or(std::string());
  for (auto& v : *t["scenarios"].as_array())
    b.scenarios.push_back(kRoot + "/" + *v.value<std::string>());
  for (auto& v : *t["free"].as_array()) b.free.push_back(*v.value<std::string>());
  b.grid = t["grid"].value_or(0);
  b.tolerance = t["tolerance"].value_or(0.0);
  b.winnerRight = t["winner_right"].value_or(0);
  for (auto& [k, v] : *t["mean_abs_error"].as_table())
    b.mean[std::string(k.str())] = *v.value<double>();
  for (auto& [k, v] : *t["max_abs_error"].as_table())
    b.max[std::string(k.str())] = *v.value<double>();
  return b;
}

TEST(SimCrossval, HeldOutErrorNoWorseThanRecorded) {
  Budget b = loadBudget();
  ASSERT_FALSE(b.free.empty());
  ASSERT_EQ(b.tolerance, 0.02) << "the issue's tolerance: 2 points";
  auto profile = sim::loadProfile(b.profile);
  ASSERT_TRUE(profile.isOk()) << profile.status().toString();
  auto set = CalibrationSet::load(b.scenarios, *profile);
  ASSERT_TRUE(set.isOk()) << set.status().toString();
  auto params = set->freeParams(b.free);
  ASSERT_TRUE(params.isOk()) << params.status().toString();
  auto grid = set->sample(*params, b.grid);
  ASSERT_TRUE(grid.isOk()) << grid.status().toString();
  auto cv = crossvalidate(*set, *grid);
  ASSERT_TRUE(cv.isOk()) << cv.status().toString();
  std::printf("%s", cv->table().c_str());
  nlohmann::json j = cv->toJson();
  ASSERT_EQ(j["schema"], "tide.sim.crossval/1");
  for (const auto& [kind, recorded] : b.mean) {
    ASSERT_TRUE(j["mean_abs_error"].contains(kind)) << kind;
    double now = j["mean_abs_error"][kind];
    EXPECT_LE(now, recorded + b.tolerance)
        << kind << " mean held-out |error| " << now << " > recorded " << recorded << " + tolerance";
    if (now < recorded - b.tolerance)
      std::printf("note: %s mean held-out |error| %.4f improved on %.4f: tighten the budget\n",
                  kind.c_str(), now, recorded);
  }
  for (const auto& [kind, recorded] : b.max) {
    double now = j["max_abs_error"][kind];
    EXPECT_LE(now, recorded + b.tolerance)
        << kind << " max held-out |error| " << now << " > recorded " << recorded << " + tolerance";
  }
  EXPECT_GE(cv->winnerRight, b.winnerRight);
  EXPECT_EQ(cv->rowsTotal, static_cast<int>(set->scenarios().size()));
}

// A scenario's own settings hold in the calibration set, as under `tide
// sim`: a variant that sets [strategy] lock_poll_ms (scripts/sim_variants.py
// --crossval) is priced with it, not with the profile's value.
TEST(SimCrossval, ScenarioOverridesHoldInTheSet) {
  const std::string base = kRoot + "/scenarios/published/glm-4.5-air.toml";
  std::ifstream in(base);
  std::stringstream text;
  text << in.rdbuf();
  std::string t = text.str();
  const std::string header = "\n[strategy]\n";
  size_t at = t.find(header);
  ASSERT_NE(at, std::string::npos);
  t.insert(at + header.size(), "lock_poll_ms = 0\n");
  const std::string variant = ::testing::TempDir() + "/tide-crossval-lock-poll.toml";
  std::ofstream(variant) << t;
  auto profile = sim::loadProfile("miles");
  ASSERT_TRUE(profile.isOk()) << profile.status().toString();
  double s[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    auto set = CalibrationSet::load({i == 0 ? base : variant}, *profile);
    ASSERT_TRUE(set.isOk()) << set.status().toString();
    auto params = set->freeParams({"host_op"});
    ASSERT_TRUE(params.isOk()) << params.status().toString();
    for (size_t r = 0; r < set->rows().size(); ++r) {
      if (set->rows()[r].strategy != "miles-broadcast") continue;
      auto p = set->predict(r, *params, {profile->calib.hostOpSeconds});
      ASSERT_TRUE(p.isOk()) << p.status().toString();
      s[i] = *p;
    }
  }
  std::remove(variant.c_str());
  ASSERT_GT(s[0], 0);
  // The polled lock (100 ms sleeps) costs GLM-4.5-Air's broadcast about 0.7 s.
  EXPECT_LT(s[1], 0.95 * s[0]) << "lock_poll_ms = 0 ignored: " << s[1] << " s vs " << s[0];
}

}  // namespace
}  // namespace tide::harness
