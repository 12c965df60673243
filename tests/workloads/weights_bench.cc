// Google Benchmark: synthetic weight generation per core.
//   build-*/tests/workloads/workloads_bench --benchmark_filter=Weights
#include <benchmark/benchmark.h>

#include "workloads/weights.h"

namespace tide::workloads {
namespace {

ModelInventory& inventory() {
  static ModelInventory inv = buildInventory(orThrow(loadModel("tiny-moe")));
  return inv;
}

void BM_WeightsInitial(benchmark::State& state) {
  SyntheticWeights w(inventory(), RoutingTrace{}, RlConfig{}, 4);
  std::vector<uint16_t> buf(1 << 20);
  for (auto _ : state) {
    w.fillInitial(1, 0, buf.size(), buf.data());
    benchmark::DoNotOptimize(buf.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * buf.size() * 2));
}
BENCHMARK(BM_WeightsInitial);

// Version V costs V AdamW steps per element.
void BM_WeightsVersion(benchmark::State& state) {
  const int v = static_cast<int>(state.range(0));
  SyntheticWeights w(inventory(), RoutingTrace{}, RlConfig{}, v);
  std::vector<uint16_t> buf(1 << 16);
  for (auto _ : state) {
    w.fillFlat(1, 0, buf.size(), v, buf.data());
    benchmark::DoNotOptimize(buf.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * buf.size() * 2));
  state.counters["elem_steps_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * buf.size() * v), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_WeightsVersion)->Arg(1)->Arg(10)->Arg(100);

}  // namespace
}  // namespace tide::workloads

BENCHMARK_MAIN();
