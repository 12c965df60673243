// The headline reproduction: scenarios/kimi-k2-miles.toml against the
// published Kimi-K2 figures (ANCHORS.md): broadcast 53.3 s and p2p 7.2 s,
// each within 15 %, ratio 6.4-8.4; and each simulation under 10 s of CPU.

#include <gtest/gtest.h>

#include "sim/report.h"
#include "sim/scenario.h"
#include "sim/simulator.h"

#ifndef TIDE_SOURCE_DIR
#define TIDE_SOURCE_DIR "."
#endif

namespace tide::sim {
namespace {

Scenario kimi() {
  auto sc = loadScenario(std::string(TIDE_SOURCE_DIR) + "/scenarios/kimi-k2-miles.toml");
  if (!sc.isOk()) throw StatusError(sc.status());
  return std::move(sc).value();
}

TEST(KimiK2, BroadcastWithin15PercentOfPublished) {
  auto b = simulate(kimi(), "broadcast");
  ASSERT_TRUE(b.isOk()) << b.status().toString();
  printStrategyResult(*b, kimi());
  EXPECT_NEAR(b->seconds, 53.279, 0.15 * 53.279);
  EXPECT_LT(b->wallSeconds, 10.0);
}

TEST(KimiK2, P2pWithin15PercentOfPublishedAndRatio) {
  auto b = simulate(kimi(), "broadcast");
  auto p = simulate(kimi(), "p2p");
  ASSERT_TRUE(b.isOk() && p.isOk());
  printStrategyResult(*p, kimi());
  EXPECT_NEAR(p->seconds, 7.227, 0.15 * 7.227);
  double ratio = b->seconds / p->seconds;
  EXPECT_GE(ratio, 6.4);
  EXPECT_LE(ratio, 8.4);
  EXPECT_LT(p->wallSeconds, 10.0);
}

}  // namespace
}  // namespace tide::sim
