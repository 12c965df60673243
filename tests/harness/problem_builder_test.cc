// One problem builder: a scenario file and `tide sync`/`tide plan` flags
// that describe the same update give the same plan, byte for byte, with
// one set of defaults.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine/plan/plan_params.h"
#include "engine/sync/strategy_registry.h"
#include "harness/sim/scenario_plans.h"
#include "harness/workload_options.h"
#include "sim/scenario.h"

namespace tide::harness {
namespace {

std::string scenario(const std::string& strategyTable) {
  return R"(
name = "same-update"
[model]
zoo = "tiny-moe"
[train]
layout = "tp=2,pp=2,ep=2"
[infer]
layout = "engines=2,tp=2,ep=2"
[cluster]
preset = "h100-ib-8x400"
[strategy]
)" + strategyTable;
}

std::string flagsPlan(const std::string& strategy, const std::string& bucket,
                      const std::string& chunk) {
  WorkloadOptions o;
  o.model = "tiny-moe";
  o.train = "tp=2,pp=2,ep=2";
  o.infer = "engines=2,tp=2,ep=2";
  o.cluster = "h100-ib-8x400";
  o.strategy = strategy;
  o.inferDtype = "model";  // the scenario serves the model's own dtype
  if (!bucket.empty()) o.bucket = bucket;
  if (!chunk.empty()) o.chunk = chunk;
  auto w = orThrow(loadWorkload(o));
  return orThrow(w->makePlan()).toJson().dump();
}

std::string scenarioPlanJson(const std::string& text, const std::string& strategy) {
  const sim::Scenario sc = orThrow(sim::parseScenario(text, "test"));
  const sync::StrategyDescriptor* d = orThrow(sync::findStrategy(strategy));
  return orThrow(scenarioPlan(sc, *d)).toJson().dump();
}

TEST(ProblemBuilder, AScenarioAndTheFlagsOfTheSameUpdateGiveTheSamePlan) {
  for (const char* s : {"broadcast", "p2p", "p2p-rr", "miles-broadcast"}) {
    SCOPED_TRACE(s);
    const std::string a = scenarioPlanJson(scenario("bucket = \"64KiB\"\nchunk = \"16KiB\"\n"), s);
    const std::string b = flagsPlan(s, "64KiB", "16KiB");
    EXPECT_EQ(a.size(), b.size());
    EXPECT_TRUE(a == b) << "the plans differ";
  }
}

TEST(ProblemBuilder, OneSetOfDefaults) {
  // Nothing given on either side: the same bucket and chunk.
  const std::string a = scenarioPlanJson(scenario(""), "broadcast");
  const std::string b = flagsPlan("broadcast", "", "");
  EXPECT_TRUE(a == b) << "the defaults differ";
  const plan::PlanOptions d;
  const WorkloadOptions o;
  EXPECT_EQ(*parseSize(o.bucket), d.bucketBytes);
  EXPECT_EQ(*parseSize(o.chunk), d.chunkBytes);
  const sim::Scenario sc = orThrow(sim::parseScenario(scenario(""), "test"));
  EXPECT_EQ(sc.strategy.options.bucketBytes, d.bucketBytes);
  EXPECT_EQ(sc.strategy.options.chunkBytes, d.chunkBytes);
}

TEST(ProblemBuilder, SizesAreWrittenAsFlagsThatParseBackExactly) {
  // tide sync --plan rebuilds the update from a plan's sizes as flags.
  for (uint64_t b : {uint64_t{1}, uint64_t{1000}, uint64_t{4096}, uint64_t{512} << 10,
                     uint64_t{1000000000}, uint64_t{3} << 30, uint64_t{1536}}) {
    EXPECT_EQ(*parseSize(sizeFlag(b)), b) << sizeFlag(b);
  }
  EXPECT_EQ(sizeFlag(512 << 10), "512KiB");
}

TEST(ProblemBuilder, ThePlanRecordsWhatItWasMadeFor) {
  WorkloadOptions o;
  o.model = "tiny-moe";
  o.train = "tp=2,pp=2,ep=2";
  o.infer = "engines=2,tp=2,ep=2";
  o.cluster = "h100-ib-8x400";
  o.strategy = "p2p";
  o.chunk = "16KiB";
  o.inferDtype = "bf16";  // as tide sync plans
  auto w = orThrow(loadWorkload(o));
  const plan::TransferPlan p = orThrow(w->makePlan());
  const plan::PlanWorkload& r = p.params.workload;
  EXPECT_EQ(r.model, "tiny-moe");
  EXPECT_EQ(r.train, w->train.toString());
  EXPECT_EQ(r.infer, w->infer.toString());
  EXPECT_EQ(r.inferDtype, "bf16");
  EXPECT_EQ(r.cluster, w->cluster.name);
  EXPECT_EQ(r.gpusPerNode, w->cluster.gpusPerNode);
  EXPECT_EQ(p.params.options.chunkBytes, 16u << 10);
  // And reads it back from its file form.
  auto back = plan::TransferPlan::fromJson(p.toJson());
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_TRUE(back->params == p.params);
}

}  // namespace
}  // namespace tide::harness
