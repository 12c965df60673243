#include "engine/exec/executor/version_switch.h"

#include <xxhash.h>

#include <algorithm>
#include <chrono>

#include "engine/core/clock.h"

namespace tide::exec {

VersionSwitch::VersionSwitch(uint8_t* live, uint8_t* shadow, uint64_t bytes, int version)
    : copies_{live, shadow}, bytes_(bytes) {
  tag_[0] = Tag{version, XXH3_64bits(live, bytes), version >= 0};
}

VersionSwitch::~VersionSwitch() {
  stop_ = true;
  if (reader_.joinable()) reader_.join();
  if (writing_.owns_lock()) writing_.unlock();
}

ServedVersion VersionSwitch::serving() const {
  std::lock_guard<std::mutex> pick(pickMu_);
  const Tag& t = tag_[live_.load()];
  return ServedVersion{t.version, t.checksum};
}

void VersionSwitch::beginUpdate() {
  if (writing_.owns_lock()) return;  // a retried update keeps the shadow it holds
  const int s = 1 - live_.load();
  writing_ = std::unique_lock<std::shared_mutex>(copyMu_[s]);
  tag_[s].complete = false;
  updating_ = true;
}

double VersionSwitch::switchTo(int version) {
  const int s = 1 - live_.load();
  tag_[s] = Tag{version, XXH3_64bits(copies_[s], bytes_), true};
  if (writing_.owns_lock()) writing_.unlock();
  const double t0 = nowSeconds();
  {
    std::lock_guard<std::mutex> pick(pickMu_);
    live_.store(s);
  }
  const double pause = nowSeconds() - t0;
  updating_ = false;
  return pause;
}

void VersionSwitch::abortUpdate() {
  if (writing_.owns_lock()) writing_.unlock();
  updating_ = false;
}

void VersionSwitch::startGeneration(double intervalSeconds) {
  if (reader_.joinable()) return;
  reader_ = std::thread([this, intervalSeconds] { generate(intervalSeconds); });
}

GenerationStats VersionSwitch::takeStats() {
  std::lock_guard<std::mutex> g(statsMu_);
  GenerationStats s = std::move(stats_);
  stats_ = GenerationStats{};
  return s;
}

void VersionSwitch::generate(double intervalSeconds) {
  while (!stop_.load()) {
    const bool during = updating_.load();
    const double t0 = nowSeconds();
    int idx = 0;
    std::shared_lock<std::shared_mutex> pin;
    {
      std::lock_guard<std::mutex> pick(pickMu_);
      idx = live_.load();
      // Never blocks for an update: the live copy is never locked exclusively.
      pin = std::shared_lock<std::shared_mutex>(copyMu_[idx]);
    }
    const double pinned = nowSeconds() - t0;
    const Tag tag = tag_[idx];
    if (tag.version < 0) {  // nothing served yet (an engine before it joins)
      pin.unlock();
      std::this_thread::sleep_for(std::chrono::duration<double>(std::max(intervalSeconds, 1e-3)));
      continue;
    }
    const bool whole = tag.complete && XXH3_64bits(copies_[idx], bytes_) == tag.checksum;
    pin.unlock();
    {
      std::lock_guard<std::mutex> g(statsMu_);
      ++stats_.reads;
      if (during) ++stats_.readsDuringUpdate;
      if (!whole) ++stats_.torn;
      if (tag.complete) stats_.versions.insert(tag.version);
      if (pinned > stats_.maxPinSeconds) stats_.maxPinSeconds = pinned;
    }
    if (intervalSeconds > 0) {
      std::this_thread::sleep_for(std::chrono::duration<double>(intervalSeconds));
    }
  }
}

}  // namespace tide::exec
