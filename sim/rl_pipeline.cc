#include "sim/rl_pipeline.h"

#include <algorithm>

namespace tide::sim {

RlResult simulateRl(const RlConfig& cfg) {
  const int n = std::max(1, cfg.steps);
  const int k = cfg.async ? std::max(0, cfg.staleness) : 0;
  // Index 0 is the initial state: version 0 is available at t = 0.
  std::vector<double> genStart(n + 1, 0), genEnd(n + 1, 0), trainEnd(n + 1, 0), syncStart(n + 1, 0),
      syncEnd(n + 1, 0);
  std::vector<double> genDur(n + 1, 0), trainDur(n + 1, 0);
  std::vector<int> version(n + 1, 0);
  RlResult r;
  r.mode = cfg.async ? "async" : "sync";
  r.staleness = k;
  r.syncSeconds = cfg.syncSeconds;
  r.stalenessHistogram.assign(k + 1, 0);
  double genBusy = 0, trainBusy = 0;
  for (int t = 1; t <= n; ++t) {
    auto samples = workloads::generateRollout(cfg.rollout, t);
    double gen = 0, tokens = 0;
    for (const auto& s : samples) {
      gen = std::max(gen, s.endS);
      tokens += s.promptTokens + s.responseTokens;
    }
    genDur[t] = gen;
    trainDur[t] = tokens / cfg.trainTokensPerSecond;
    // Batch t may use weights of version >= t-1-k: it waits for that sync.
    int need = std::max(0, t - 1 - k);
    genStart[t] = std::max(genEnd[t - 1], syncEnd[need]);
    // The newest version whose sync finished by then is the one it runs on.
    int v = need;
    while (v + 1 <= t - 1 && syncEnd[v + 1] <= genStart[t]) ++v;
    version[t] = v;
    double end = genStart[t] + gen;
    // Weight updates pause generation while they run (pause -> transfer -> resume).
    for (int u = 1; u < t; ++u) {
      if (syncStart[u] >= genStart[t] && syncStart[u] < end) end += syncEnd[u] - syncStart[u];
    }
    genEnd[t] = end;
    double trainStart = std::max(genEnd[t], syncEnd[t - 1]);
    trainEnd[t] = trainStart + trainDur[t];
    syncStart[t] = trainEnd[t];
    syncEnd[t] = syncStart[t] + cfg.syncSeconds;
    genBusy += gen;
    trainBusy += trainDur[t];
    int lag = (t - 1) - v;
    r.stalenessHistogram[std::min(lag, k)] += 1;
    r.meanGenSeconds += gen / n;
    r.meanTrainSeconds += trainDur[t] / n;
  }
  // Makespan ends when the last batch is trained (its sync feeds a next step).
  r.makespan = trainEnd[n];
  r.samplesPerSecond = r.makespan > 0 ? n * cfg.rollout.samplesPerStep / r.makespan : 0;
  r.inferenceIdle = r.makespan > 0 ? 1 - std::min(1.0, genBusy / r.makespan) : 0;
  r.trainerIdle = r.makespan > 0 ? 1 - std::min(1.0, trainBusy / r.makespan) : 0;
  return r;
}

nlohmann::json RlResult::toJson() const {
  return {{"mode", mode},
          {"staleness", staleness},
          {"makespan_seconds", makespan},
          {"samples_per_second", samplesPerSecond},
          {"inference_idle_fraction", inferenceIdle},
          {"trainer_idle_fraction", trainerIdle},
          {"mean_generation_seconds", meanGenSeconds},
          {"mean_train_seconds", meanTrainSeconds},
          {"sync_seconds", syncSeconds},
          {"staleness_histogram", stalenessHistogram}};
}

}  // namespace tide::sim
