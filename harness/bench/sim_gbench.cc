// Google Benchmark for the simulator's max-min sharing solver: re-solving a
// component after one flow finishes, on a bipartite all-to-all pattern (the
// shape of p2p writes) of growing size.

#include <benchmark/benchmark.h>

#include <vector>

#include "sim/flow_solver.h"

namespace {

using tide::sim::FlowSolver;
using tide::sim::LinkId;

// n senders x n receivers, each sender writes to `fan` receivers.
void buildAllToAll(FlowSolver& s, int n, int fan, std::vector<LinkId>& tx,
                   std::vector<LinkId>& rx) {
  for (int i = 0; i < n; ++i) tx.push_back(s.addLink(47.5e9));
  for (int i = 0; i < n; ++i) rx.push_back(s.addLink(47.5e9));
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < fan; ++k) s.start({tx[i], rx[(i + k * 7 + 1) % n]}, 1e9 + i * 1e3 + k, 0);
  }
}

void BM_SolveAllToAll(benchmark::State& state) {
  int n = static_cast<int>(state.range(0));
  int fan = 8;
  for (auto _ : state) {
    state.PauseTiming();
    FlowSolver s;
    std::vector<LinkId> tx, rx;
    buildAllToAll(s, n, fan, tx, rx);
    state.ResumeTiming();
    s.resolve(0);
    benchmark::DoNotOptimize(s.nextCompletion());
  }
  state.counters["flows"] = n * fan;
  state.SetItemsProcessed(state.iterations() * n * fan);
}
BENCHMARK(BM_SolveAllToAll)->Arg(64)->Arg(256)->Arg(1024)->Unit(benchmark::kMicrosecond);

// Drains every flow: one incremental re-solve per completion batch.
void BM_DrainAllToAll(benchmark::State& state) {
  int n = static_cast<int>(state.range(0));
  uint64_t completions = 0;
  for (auto _ : state) {
    FlowSolver s;
    std::vector<LinkId> tx, rx;
    buildAllToAll(s, n, 8, tx, rx);
    s.resolve(0);
    while (true) {
      double t = s.nextCompletion();
      if (t == std::numeric_limits<double>::infinity()) break;
      completions += s.popCompleted(t).size();
      s.resolve(t);
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(completions));
}
BENCHMARK(BM_DrainAllToAll)->Arg(64)->Arg(256)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
