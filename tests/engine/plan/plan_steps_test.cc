// The plan's step vocabulary: a small graph of every kind round-trips
// through JSON exactly; bad references, cycles and non-finite sizes are
// refused with the reason.

#include "engine/plan/plan_steps.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "engine/plan/reshard.h"
#include "engine/plan/transfer_plan.h"

namespace tide::plan {
namespace {

StepGraph everyKind() {
  StepGraph g;
  uint16_t st = g.stage("work");
  int32_t lock = g.lock(true);
  g.locks[lock].stage = g.stage("lock_poll");
  uint32_t grp = g.group({0, 1, 2});
  uint32_t prev = g.join();
  for (int k = 1; k < kStepKindCount; ++k) {
    Step s;
    s.kind = static_cast<StepKind>(k);
    s.stage = st;
    s.rank = 1;
    s.peer = 2;
    s.group = grp;
    s.lanes = 2;
    s.count = 1.5 * k;
    s.loopSteps = 7;
    s.bytes = 1e9 + k;
    s.chunkBytes = 4096;
    if (k == 2) s.acquire = lock;
    if (k == 3) s.release = lock;
    uint32_t id = g.add(s);
    g.dep(prev, id);
    prev = id;
  }
  g.bucketsPerStage = 3;
  g.mergeFactor = 1.25;
  g.wireBytes = 5e9;
  return g;
}

TEST(PlanSteps, EveryKindRoundTripsThroughJson) {
  StepGraph g = everyKind();
  ASSERT_TRUE(g.validate(3).isOk()) << g.validate(3).toString();
  auto back = StepGraph::fromJson(nlohmann::json::parse(g.toJson().dump()));
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_EQ(back->toJson(), g.toJson());
  ASSERT_EQ(back->steps.size(), g.steps.size());
  for (size_t i = 0; i < g.steps.size(); ++i) {
    EXPECT_EQ(back->steps[i].kind, g.steps[i].kind);
    EXPECT_EQ(back->steps[i].bytes, g.steps[i].bytes);
    EXPECT_EQ(back->steps[i].acquire, g.steps[i].acquire);
  }
  EXPECT_TRUE(back->locks[0].polled);
  EXPECT_EQ(back->mergeFactor, 1.25);
}

TEST(PlanSteps, APlanCarriesItsStepsThroughJson) {
  TransferPlan p;
  p.strategy = "steps-only";
  p.ranks = *placeRanks(2, 1, Placement{8, false, -1});
  p.work = everyKind();
  ASSERT_TRUE(p.validate().isOk()) << p.validate().toString();
  auto back = TransferPlan::fromJson(p.toJson());
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_EQ(back->work.steps.size(), p.work.steps.size());
  // A plan whose steps name a missing rank is invalid as a whole.
  p.ranks.pop_back();
  EXPECT_FALSE(p.validate().isOk());
}

TEST(PlanSteps, RefusesBadReferencesCyclesAndSizes) {
  auto refuses = [](StepGraph g, const std::string& why) {
    Status s = g.validate(3);
    ASSERT_FALSE(s.isOk()) << why;
    EXPECT_NE(s.message().find(why), std::string::npos) << s.toString();
  };
  StepGraph g = everyKind();
  // A copy of the valid graph with one thing broken is refused with `why`.
  auto refusesAfter = [&](auto edit, const std::string& why) {
    StepGraph c = g;
    edit(c);
    refuses(c, why);
  };
  refusesAfter([](StepGraph& c) { c.dep(static_cast<uint32_t>(c.steps.size() - 1), 0); }, "cycle");
  refusesAfter([](StepGraph& c) { c.steps[2].rank = 3; }, "missing rank");
  refusesAfter([](StepGraph& c) { c.steps[7].group = 9; }, "missing group");
  refusesAfter([](StepGraph& c) { c.steps[1].bytes = std::nan(""); }, "non-finite");
  refusesAfter([](StepGraph& c) { c.steps[1].count = -1; }, "negative");
  refusesAfter([](StepGraph& c) { c.steps[2].acquire = 4; }, "bad lock");
  refusesAfter([](StepGraph& c) { c.edges.emplace_back(0, 99); }, "bad step");
  // From JSON: an unknown kind, an index that would wrap onto a valid one,
  // unexpected fields, bad shape figures.
  auto fromEdited = [&](auto edit) {
    nlohmann::json j = g.toJson();
    edit(j);
    return StepGraph::fromJson(j);
  };
  auto bad = fromEdited([](nlohmann::json& j) { j["steps"][1][0] = "teleport"; });
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("teleport"), std::string::npos);
  EXPECT_FALSE(fromEdited([](nlohmann::json& j) { j["steps"][1][1] = 65536; }).isOk());
  EXPECT_FALSE(fromEdited([](nlohmann::json& j) { j["steps"][1][5] = 4294967296LL; }).isOk());
  EXPECT_FALSE(fromEdited([](nlohmann::json& j) { j["steps"][1][3] = "one"; }).isOk());
  EXPECT_FALSE(fromEdited([](nlohmann::json& j) { j["step_fields"][0] = "sort"; }).isOk());
  EXPECT_FALSE(fromEdited([](nlohmann::json& j) { j["merge_factor"] = 0.5; }).isOk());
  EXPECT_FALSE(fromEdited([](nlohmann::json& j) { j["locks"][0]["stage"] = -1; }).isOk());
  EXPECT_TRUE(fromEdited([](nlohmann::json&) {}).isOk());
  refusesAfter([](StepGraph& c) { c.locks[0].stage = 9; }, "polled lock");
  refusesAfter([](StepGraph& c) { c.steps[7].lanes = 0; }, "no lanes");
  refusesAfter([](StepGraph& c) { c.steps[1].stage = 9; }, "bad stage");
  EXPECT_FALSE(StepGraph::fromJson(nlohmann::json::parse(R"({"steps":3})")).isOk());
}

TEST(PlanSteps, RanksArePlacedAsAsked) {
  auto r = placeRanks(4, 2, Placement{2, false, 6});
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ((*r)[4].node, 3u);  // GPU 6 of 2 per node
  EXPECT_EQ((*r)[5].gpu, 1u);
  EXPECT_FALSE(placeRanks(4, 2, Placement{2, false, 2}).isOk());  // inside the trainers
  auto shared = placeRanks(3, 2, Placement{4, false, 3});         // after them, same node
  ASSERT_TRUE(shared.isOk());
  EXPECT_EQ((*shared)[3].node, 0u);
  EXPECT_EQ((*shared)[3].gpu, 3u);
  EXPECT_EQ((*shared)[4].node, 1u);
}

}  // namespace
}  // namespace tide::plan
