// Google Benchmark for the planner: the reshard of a Kimi-K2-shaped model on
// the published layouts (256 -> 256 GPUs), source assignment, and the full
// p2p / broadcast plans with validation, at a scale that keeps one iteration
// well under a second (the full-size figure is kimi_plan_test's).

#include <benchmark/benchmark.h>

#include "engine/plan/lower_bound.h"
#include "engine/plan/reshard.h"
#include "engine/sync/p2p_assignment.h"
#include "engine/sync/strategy_registry.h"
#include "workloads/model.h"

namespace {

using namespace tide;

struct Kimi {
  workloads::ModelInventory inv;
  workloads::TrainLayout train;
  workloads::InferLayout infer;
  workloads::ClusterSpec cluster;

  explicit Kimi(int scale) {
    auto spec = orThrow(workloads::scaled(orThrow(workloads::loadModel("kimi-k2")), scale));
    train = orThrow(workloads::parseTrainLayout("tp=8,pp=8,cp=4,ep=32"));
    infer = orThrow(workloads::parseInferLayout("engines=8,tp=32,ep=32,dp_attn=8"));
    cluster = orThrow(workloads::loadCluster("h100-ib-8x400:nodes=64"));
    inv = workloads::buildInventory(spec);
  }
};

const Kimi& kimi() {
  static const Kimi k(16);
  return k;
}

void BM_BasePlanAndReshard(benchmark::State& state) {
  const Kimi& k = kimi();
  for (auto _ : state) {
    auto base = orThrow(plan::basePlan(k.inv, k.train, k.infer, plan::Placement{8, false}));
    auto rs = orThrow(plan::planReshard(base));
    benchmark::DoNotOptimize(rs.pieces.size());
  }
}

void BM_AssignSources(benchmark::State& state) {
  const Kimi& k = kimi();
  auto base = orThrow(plan::basePlan(k.inv, k.train, k.infer, plan::Placement{8, false}));
  auto rs = orThrow(plan::planReshard(base));
  for (auto _ : state) {
    auto a = orThrow(sync::assignSources(base, rs, k.cluster, state.range(0) != 0));
    benchmark::DoNotOptimize(a.source.data());
  }
  state.SetLabel(state.range(0) ? "round-robin" : "balanced");
}

void BM_StrategyPlan(benchmark::State& state, const char* name) {
  const Kimi& k = kimi();
  auto base = orThrow(plan::basePlan(k.inv, k.train, k.infer, plan::Placement{8, false}));
  auto rs = orThrow(plan::planReshard(base));
  auto strategy = orThrow(sync::createStrategy(name));
  size_t moves = 0;
  for (auto _ : state) {
    auto p = orThrow(strategy->makePlan(
        sync::SyncProblem{&base, &rs, &k.cluster, &k.train, &k.infer, sync::StrategyOptions{}}));
    moves = p.moves.size();
    benchmark::DoNotOptimize(orThrow(plan::lowerBound(p, k.cluster)).seconds);
  }
  state.counters["moves"] = static_cast<double>(moves);
}

BENCHMARK(BM_BasePlanAndReshard)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AssignSources)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_StrategyPlan, p2p, "p2p")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_StrategyPlan, broadcast, "broadcast")->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
