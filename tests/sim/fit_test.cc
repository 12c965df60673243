// Fitting profile constants (sim/fit.h) and the profile format's ranges and
// residuals: every shipped constant is labelled and ranged, the grid
// interpolates a linear response exactly, a fit finds a known constant, and
// a written profile reads back the same.

#include "sim/fit.h"

#include <gtest/gtest.h>

#include <cmath>

#include "sim/cost_profile.h"
#include "sim/profile_writer.h"

namespace tide::sim {
namespace {

// The calibration rule: no constant without a label, a source and the range
// it is known to lie in (what a fit may move it within).
TEST(CostProfileLabels, EveryShippedConstantHasALabelASourceAndARange) {
  ASSERT_FALSE(profileNames().empty());
  for (const auto& name : profileNames()) {
    auto p = loadProfile(name);
    ASSERT_TRUE(p.isOk()) << name << ": " << p.status().toString();
    for (const auto& c : p->constants) {
      const std::string label = constantLabelName(c.label);
      EXPECT_TRUE(label == "datasheet" || label == "micro-benchmark" || label == "fitted-on" ||
                  label == "estimate")
          << name << " " << c.key;
      EXPECT_FALSE(c.source.empty()) << name << " " << c.key;
      EXPECT_TRUE(c.hasRange()) << name << " " << c.key << " gives no low/high";
      EXPECT_LE(c.lowSeconds, c.seconds) << name << " " << c.key;
      EXPECT_GE(c.highSeconds, c.seconds) << name << " " << c.key;
      if (c.label == ConstantLabel::kMicroBenchmark) {
        EXPECT_FALSE(c.command.empty()) << c.key;
      }
      if (c.label == ConstantLabel::kFittedOn) {
        EXPECT_FALSE(c.rows.empty()) << c.key;
      }
    }
  }
}

// A constant fitted on a run's own figure says so (issue: mla_requant).
TEST(CostProfileLabels, MlaRequantIsFittedOnKimiK2) {
  auto p = loadProfile("miles");
  ASSERT_TRUE(p.isOk());
  const CostConstant* c = p->find("mla_requant");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->label, ConstantLabel::kFittedOn);
  ASSERT_FALSE(c->rows.empty());
  EXPECT_EQ(c->rows[0].rfind("kimi-k2-miles/", 0), 0u);
}

std::string oneConstant(const std::string& extra) {
  std::string s = "name = \"t\"\nstack = \"s\"\nversion = \"v\"\n";
  for (const char* k : {"host_op", "py_step", "engine_call", "mla_requant", "register_page"})
    s += std::string("[") + k +
         "]\nvalue = 1.0\nunit = \"ms\"\nlabel = \"estimate\"\nsource = \"x\"\n";
  return s + "[lock_poll]\nvalue = 2.0\nunit = \"ms\"\nlabel = \"estimate\"\nsource = \"x\"\n" +
         extra;
}

TEST(CostProfileRanges, BadRangesAreOneClearError) {
  auto ok = parseProfile(oneConstant("low = 1.0\nhigh = 3.0\n"), "t.toml");
  ASSERT_TRUE(ok.isOk()) << ok.status().toString();
  EXPECT_DOUBLE_EQ(ok->find("lock_poll")->lowSeconds, 1e-3);
  EXPECT_DOUBLE_EQ(ok->find("lock_poll")->highSeconds, 3e-3);
  for (auto [text, want] :
       {std::pair{"low = 1.0\n", "go together"},
        std::pair{"low = 3.0\nhigh = 4.0\n", "must hold the value"},
        std::pair{"low = -2.0\nhigh = -1.0\n", "low"}, std::pair{"residuals = 3\n", "residuals"}}) {
    auto p = parseProfile(oneConstant(text), "t.toml");
    ASSERT_FALSE(p.isOk()) << text;
    EXPECT_NE(p.status().message().find(want), std::string::npos) << p.status().message();
  }
}

TEST(ProfileWriter, AWrittenProfileReadsBackTheSame) {
  for (const auto& name : profileNames()) {
    auto p = loadProfile(name);
    ASSERT_TRUE(p.isOk());
    CostProfile q = *p;
    q.constants[0].label = ConstantLabel::kFittedOn;
    q.constants[0].rows = {"a/miles-p2p", "b/miles-broadcast"};
    q.constants[0].residuals = {-0.125, 0.25};
    auto back = parseProfile(profileToToml(q), "written.toml");
    ASSERT_TRUE(back.isOk()) << back.status().toString() << "\n" << profileToToml(q);
    ASSERT_EQ(back->constants.size(), q.constants.size());
    for (size_t i = 0; i < q.constants.size(); ++i) {
      const auto &a = q.constants[i], &b = back->constants[i];
      EXPECT_NEAR(a.seconds, b.seconds, 1e-8 * (1 + a.seconds)) << a.key;
      EXPECT_NEAR(a.lowSeconds, b.lowSeconds, 1e-8 * (1 + a.lowSeconds)) << a.key;
      EXPECT_NEAR(a.highSeconds, b.highSeconds, 1e-8 * (1 + a.highSeconds)) << a.key;
      EXPECT_EQ(a.label, b.label) << a.key;
      EXPECT_EQ(a.rows, b.rows) << a.key;
      EXPECT_EQ(a.command, b.command) << a.key;
      EXPECT_EQ(a.source, b.source) << a.key;
      EXPECT_EQ(a.residuals, b.residuals) << a.key;
    }
  }
}

// Rows whose time is linear in two constants: the grid interpolates them
// exactly (linear-scale constants), and the fit recovers the constants
// that produced the "published" figures.
TEST(Fit, RecoversTheConstantsOfALinearResponse) {
  std::vector<FitParam> ps{{"a", 0.0, 2.0}, {"b", 0.0, 1.0}};
  const std::vector<std::pair<double, double>> slopes{{3, 1}, {1, 4}, {2, 2}, {0.5, 0.1}};
  ResponseGrid g(ps, 5, slopes.size());
  auto truth = [&](size_t r, double a, double b) {
    return 1 + slopes[r].first * a + slopes[r].second * b;
  };
  for (size_t i = 0; i < g.points(); ++i) {
    auto x = g.point(i);
    for (size_t r = 0; r < slopes.size(); ++r) g.set(r, i, truth(r, x[0], x[1]));
  }
  EXPECT_NEAR(g.predict(0, {0.7, 0.33}), truth(0, 0.7, 0.33), 1e-12);
  std::vector<double> pub;
  for (size_t r = 0; r < slopes.size(); ++r) pub.push_back(truth(r, 1.3, 0.4));
  auto f = fitConstants(g, pub, std::vector<bool>(slopes.size(), true));
  ASSERT_TRUE(f.isOk()) << f.status().toString();
  EXPECT_NEAR(f->constants[0], 1.3, 1e-3);
  EXPECT_NEAR(f->constants[1], 0.4, 1e-3);
  EXPECT_LT(f->meanAbsLogError, 1e-4);
  // Rows left out do not pull the fit: only row 3 at other constants.
  pub[3] = truth(3, 0.2, 0.9);
  std::vector<bool> use{true, true, true, false};
  auto g2 = fitConstants(g, pub, use);
  ASSERT_TRUE(g2.isOk());
  EXPECT_NEAR(g2->constants[0], 1.3, 1e-3);
  // Four constants are refused.
  ResponseGrid four({{"a", 0, 1}, {"b", 0, 1}, {"c", 0, 1}, {"d", 0, 1}}, 2, 1);
  EXPECT_FALSE(fitConstants(four, {1.0}, {true}).isOk());
}

TEST(Fit, LogScaleRangesSpanDecades) {
  FitParam p{"k", 1e-6, 1e-2};
  ASSERT_TRUE(p.logScale());
  ResponseGrid g({p}, 5, 1);
  EXPECT_NEAR(g.point(0)[0], 1e-6, 1e-18);
  EXPECT_NEAR(g.point(2)[0], 1e-4, 1e-16);
  EXPECT_NEAR(g.point(4)[0], 1e-2, 1e-14);
}

// A time linear in a constant whose range spans decades (log-spaced grid
// points 1, 7.07 and 50 ms at three points, as the crossval gate samples
// engine_call): the interpolation is a straight line in the constant itself,
// so it is exact between the points, and a fit recovers the constant. A
// straight line in log space would put 20 ms at 1 + 30 * 0.0255 instead of
// 1 + 30 * 0.02 and pull the fit to about 14 ms.
TEST(Fit, LinearResponseOnALogGridIsInterpolatedExactly) {
  FitParam p{"engine_call", 1e-3, 50e-3};
  ASSERT_TRUE(p.logScale());
  const std::vector<double> slopes{30, 5, 80};
  ResponseGrid g({p}, 3, slopes.size());
  auto truth = [&](size_t r, double c) { return 1 + slopes[r] * c; };
  for (size_t i = 0; i < g.points(); ++i)
    for (size_t r = 0; r < slopes.size(); ++r) g.set(r, i, truth(r, g.point(i)[0]));
  for (double c : {1.5e-3, 4e-3, 20e-3, 35e-3})
    EXPECT_NEAR(g.predict(0, {c}), truth(0, c), 1e-12) << c;
  std::vector<double> pub;
  for (size_t r = 0; r < slopes.size(); ++r) pub.push_back(truth(r, 20e-3));
  auto f = fitConstants(g, pub, std::vector<bool>(slopes.size(), true));
  ASSERT_TRUE(f.isOk()) << f.status().toString();
  EXPECT_NEAR(f->constants[0], 20e-3, 1e-5);
}

}  // namespace
}  // namespace tide::sim
