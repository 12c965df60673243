#include "engine/data/replay_buffer.h"

namespace tide::data {

void ReplayBuffer::add(std::shared_ptr<const Batch> batch, int64_t weightVersion) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.push_back({std::move(batch), weightVersion});
  while (entries_.size() > config_.capacity) {
    entries_.pop_front();
    ++evicted_;
  }
}

size_t ReplayBuffer::evictOlderThan(int64_t currentVersion) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t before = entries_.size();
  std::erase_if(entries_, [&](const ReplayEntry& e) {
    return currentVersion - e.weightVersion > config_.maxAgeVersions;
  });
  evicted_ += before - entries_.size();
  return before - entries_.size();
}

std::vector<ReplayEntry> ReplayBuffer::sample(size_t n, Sampling how, std::mt19937_64& rng) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ReplayEntry> out;
  if (entries_.empty()) return out;
  if (how == Sampling::kNewestFirst) {
    for (size_t i = 0; i < n && i < entries_.size(); ++i)
      out.push_back(entries_[entries_.size() - 1 - i]);
    return out;
  }
  std::uniform_int_distribution<size_t> pick(0, entries_.size() - 1);
  for (size_t i = 0; i < n; ++i) out.push_back(entries_[pick(rng)]);
  return out;
}

size_t ReplayBuffer::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

uint64_t ReplayBuffer::evicted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return evicted_;
}

}  // namespace tide::data
