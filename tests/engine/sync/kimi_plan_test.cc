// Full-size Kimi-K2, 256 training -> 256 inference GPUs: planning memory
// (< 2 GB per plan) and a guard on planning time. The < 5 s target itself is a
// benchmark figure (`tide plan` prints it, `tide reproduce` reports it beside
// the target): on a shared 2-core machine even CPU time grows with what runs
// next to the test, so here only a regression of 2x fails.

#include <gtest/gtest.h>

#include <cstdio>

#include "engine/core/clock.h"
#include "engine/core/process_usage.h"
#include "engine/plan/lower_bound.h"
#include "engine/sync/strategy_registry.h"
#include "tests/sanitizers.h"
#include "workloads/model.h"

namespace tide::sync {
namespace {

TEST(KimiPlan, FullSizeUnderTwoGBAndNoTimeRegression) {
  if (tide::testing::kAnySanitizer)
    GTEST_SKIP() << "CPU-time and peak-RSS bounds do not hold under a sanitizer (several times "
                    "slower, shadow memory); the default build checks them";
  auto cluster = orThrow(workloads::loadCluster("h100-ib-8x400:nodes=64"));
  auto spec = orThrow(workloads::loadModel("kimi-k2"));
  auto train = orThrow(workloads::parseTrainLayout("tp=8,pp=8,cp=4,ep=32"));
  auto infer = orThrow(
      workloads::parseInferLayout("engines=8,tp=32,ep=32,dp_attn=8,dp_lm_head=1,dense_tp=1"));
  orThrow(workloads::validate(train, spec, 256));
  orThrow(workloads::validate(infer, spec, 256));
  auto inv = workloads::buildInventory(spec);
  for (const char* name : {"p2p", "broadcast"}) {
    Stopwatch sw;
    const double cpu0 = processCpuSeconds();
    auto base = orThrow(plan::basePlan(inv, train, infer, plan::Placement{8, false}));
    auto reshard = orThrow(plan::planReshard(base));
    const double reshardS = sw.seconds();
    auto strategy = orThrow(createStrategy(name));
    auto p =
        orThrow(strategy->makePlan(SyncProblem{&base, &reshard, &cluster, &train, &infer, {}}));
    const double seconds = sw.seconds();
    const double cpu = processCpuSeconds() - cpu0;
    auto lb = orThrow(plan::lowerBound(p, cluster));
    const double rss = peakRssBytes() / 1e9;
    std::printf(
        "%s: %zu moves, planned in %.2f s wall, %.2f s CPU (reshard %.2f s), "
        "peak RSS %.2f GB, bound %.3f s at %s\n",
        name, p.moves.size(), seconds, cpu, reshardS, rss, lb.seconds, lb.bottleneck.name.c_str());
    RecordProperty(std::string(name) + "_plan_seconds", std::to_string(seconds));
    RecordProperty(std::string(name) + "_peak_rss_gb", std::to_string(rss));
    // CPU time, not wall (wall measures the neighbours); both are printed.
    if (cpu >= 5.0) std::printf("%s: over the 5 s planning target on this run\n", name);
    EXPECT_LT(cpu, 10.0) << name << ": planning time regressed (target 5 s)";
    EXPECT_LT(rss, 2.0) << name;
    EXPECT_GT(lb.seconds, 0.0);
  }
}

}  // namespace
}  // namespace tide::sync
