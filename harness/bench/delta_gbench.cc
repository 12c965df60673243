// Delta codec throughput: encode and apply, in GB/s of input weights per core
// (bytes_per_second counts the bf16 bytes of one version), at the changed
// fractions a BF16 Adam step produces. The changed fraction and the
// compression ratio are reported next to each figure.

#include <benchmark/benchmark.h>

#include <cstring>
#include <map>

#include "engine/sync/delta/delta_codec.h"
#include "tests/engine/sync/delta/bf16_update.h"

namespace tide::sync {
namespace {

constexpr size_t kElements = 16u << 20;  // 32 MiB of bf16: larger than the caches

const testing::Bf16Versions& versions(int relStepE6) {
  static std::map<int, testing::Bf16Versions> cache;
  auto it = cache.find(relStepE6);
  if (it == cache.end())
    it = cache.emplace(relStepE6, testing::adamLikeStep(kElements, relStepE6 * 1e-6, 42)).first;
  return it->second;
}

void setCounters(benchmark::State& state, const DeltaStats& st) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * st.inputBytes));
  state.counters["changed_pct"] = st.changedFraction() * 100.0;
  state.counters["compression_ratio"] =
      static_cast<double>(st.inputBytes) / static_cast<double>(st.encodedBytes);
}

void BM_Encode(benchmark::State& state) {
  const auto& v = versions(static_cast<int>(state.range(0)));
  std::vector<uint8_t> out;
  out.reserve(v.next.size() + 4096);
  DeltaStats st;
  for (auto _ : state) {
    out.clear();
    st = orThrow(encodeDelta(v.old, v.next, 2, {}, out));
    benchmark::DoNotOptimize(out.data());
  }
  setCounters(state, st);
}

void BM_Apply(benchmark::State& state) {
  const auto& v = versions(static_cast<int>(state.range(0)));
  std::vector<uint8_t> block;
  DeltaStats st = orThrow(encodeDelta(v.old, v.next, 2, {}, block));
  std::vector<uint8_t> target = v.old;
  for (auto _ : state) {
    state.PauseTiming();
    std::memcpy(target.data(), v.old.data(), target.size());  // reset to the base version
    state.ResumeTiming();
    orThrow(applyDelta(block, target));
  }
  setCounters(state, st);
}

// Relative step sizes (×1e-6 of the weight scale): 10, 100 and 1000 give
// changed fractions from well under 1 % to tens of percent at BF16.
BENCHMARK(BM_Encode)->Arg(10)->Arg(100)->Arg(1000)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Apply)->Arg(10)->Arg(100)->Arg(1000)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace tide::sync

BENCHMARK_MAIN();
