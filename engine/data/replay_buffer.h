#pragma once
// Experience replay on the consumer side: batches already transferred are
// kept (bounded by count and by age in weight versions) and sampled again
// without re-transfer. Entries hold shared references, so evicting an entry
// never frees a batch a trainer still holds: its lease returns to the pool
// only when the last reference is dropped.

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <vector>

#include "engine/data/batch.h"

namespace tide::data {

enum class Sampling : uint8_t { kUniform = 0, kNewestFirst = 1 };

struct ReplayConfig {
  size_t capacity = 16;        // batches kept
  int64_t maxAgeVersions = 4;  // evicted when currentVersion - version exceeds this
};

struct ReplayEntry {
  std::shared_ptr<const Batch> batch;
  int64_t weightVersion = 0;
};

class ReplayBuffer {
 public:
  explicit ReplayBuffer(ReplayConfig config) : config_(config) {}

  // Adds a batch; the oldest entry goes when over capacity.
  void add(std::shared_ptr<const Batch> batch, int64_t weightVersion);
  // Drops entries older than maxAgeVersions; returns how many.
  size_t evictOlderThan(int64_t currentVersion);
  // n entries (fewer if the buffer holds fewer): uniform with replacement, or
  // the n newest.
  std::vector<ReplayEntry> sample(size_t n, Sampling how, std::mt19937_64& rng) const;
  size_t size() const;
  uint64_t evicted() const;

 private:
  ReplayConfig config_;
  mutable std::mutex mu_;
  std::deque<ReplayEntry> entries_;  // oldest first
  uint64_t evicted_ = 0;
};

}  // namespace tide::data
