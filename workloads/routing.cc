#include "workloads/routing.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "workloads/rl_update.h"
#include "workloads/rng.h"

namespace tide::workloads {

namespace {

// Poisson by inversion for small means, normal approximation above.
uint32_t sampleCount(double mean, uint64_t key, uint64_t& counter) {
  if (mean <= 0) return 0;
  if (mean < 64) {
    const double u = uniformFromBits(counterHash(key, counter++));
    double p = std::exp(-mean), cdf = p;
    uint32_t k = 0;
    while (u > cdf && k < 100000) {
      ++k;
      p *= mean / k;
      cdf += p;
    }
    return k;
  }
  const double z = normalFromBits(counterHash(key, counter++));
  return static_cast<uint32_t>(std::max(0.0, std::round(mean + std::sqrt(mean) * z)));
}

}  // namespace

Status RoutingTrace::validate() const {
  if (steps < 0 || moeLayers < 0 || experts < 0) {
    return TIDE_ERROR(Code::kInvalidArgument, "routing: negative dimensions");
  }
  if (counts.size() != static_cast<size_t>(steps) * moeLayers * experts) {
    return TIDE_ERROR(Code::kInvalidArgument,
                      "routing: " + std::to_string(counts.size()) + " counts for " +
                          std::to_string(steps) + " steps x " + std::to_string(moeLayers) +
                          " layers x " + std::to_string(experts) + " experts");
  }
  return Status::ok();
}

RoutingTrace generateRouting(const ModelSpec& spec, const RoutingConfig& cfg, int steps) {
  RoutingTrace r;
  if (!spec.isMoe() || steps <= 0) return r;
  r.steps = steps;
  r.moeLayers = spec.moeLayers();
  r.experts = spec.experts;
  r.firstMoeLayer = spec.firstDenseLayers;
  r.counts.resize(static_cast<size_t>(steps) * r.moeLayers * r.experts);
  const double assignments = static_cast<double>(cfg.tokensPerStep) * spec.topK;
  std::vector<double> base(r.experts), p(r.experts);
  for (int l = 0; l < r.moeLayers; ++l) {
    // Fixed popularity ranks per layer: a seeded shuffle.
    std::vector<int> rank(r.experts);
    std::iota(rank.begin(), rank.end(), 1);
    const uint64_t shuffleKey = streamKey(cfg.seed, static_cast<uint64_t>(l), 0, kStreamRouting);
    for (int i = r.experts - 1; i > 0; --i) {
      int j = static_cast<int>(counterHash(shuffleKey, i) % static_cast<uint64_t>(i + 1));
      std::swap(rank[i], rank[j]);
    }
    for (int e = 0; e < r.experts; ++e) base[e] = std::pow(rank[e], -cfg.zipf);
    for (int s = 0; s < steps; ++s) {
      const uint64_t key = streamKey(cfg.seed, static_cast<uint64_t>(l),
                                     static_cast<uint64_t>(s) + 1, kStreamRouting);
      uint64_t counter = 0;
      double total = 0;
      for (int e = 0; e < r.experts; ++e) {
        p[e] = base[e] * std::exp(cfg.jitter * normalFromBits(counterHash(key, counter++)));
        total += p[e];
      }
      for (int e = 0; e < r.experts; ++e) {
        r.counts[(static_cast<size_t>(s) * r.moeLayers + l) * r.experts + e] =
            sampleCount(assignments * p[e] / total, key, counter);
      }
    }
  }
  return r;
}

}  // namespace tide::workloads
