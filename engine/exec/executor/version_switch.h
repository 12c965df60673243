#pragma once
// Asynchronous update with a version switch on an inference rank: two copies
// of the rank's shard, the live one that generation reads and a shadow the
// next update lands in. The transfer fills the shadow in the background
// while generation keeps reading the live copy; once every rank verified
// the new version, switchTo() makes the shadow live with one index swap
// (the pause: readers are kept out of picking a copy only for the swap).
//
// Generation is emulated by a reader thread: each pass pins the live copy,
// hashes all of it and compares with the checksum of the version that copy
// was published as. A pass that finds anything else is counted torn, so a
// test or a run fails if generation could ever see a mix of versions.
//
// Invariants: the live copy is never written (the transfer writes only the
// shadow, whose exclusive lock beginUpdate() takes after waiting for readers
// that still pinned it from before the last switch); a failed update leaves
// the live copy and its version untouched.

#include <atomic>
#include <cstdint>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <thread>

#include "engine/core/status.h"

namespace tide::exec {

// The complete version an inference rank serves.
struct ServedVersion {
  int version = -1;
  uint64_t checksum = 0;  // XXH3-64 of the whole shard
};

struct GenerationStats {
  uint64_t reads = 0;              // passes over the live shard
  uint64_t readsDuringUpdate = 0;  // of those, while an update was in flight
  uint64_t torn = 0;               // passes whose bytes were not the version served
  double maxPinSeconds = 0;        // longest wait to pin a live copy
  std::set<int> versions;          // versions generation read
};

class VersionSwitch {
 public:
  // `live` holds version `version` (checksum computed here; -1: nothing
  // served yet), `shadow` is the other copy; both `bytes` long, owned by
  // the caller.
  VersionSwitch(uint8_t* live, uint8_t* shadow, uint64_t bytes, int version);
  ~VersionSwitch();
  VersionSwitch(const VersionSwitch&) = delete;
  VersionSwitch& operator=(const VersionSwitch&) = delete;

  uint8_t* live() const { return copies_[live_.load()]; }
  uint8_t* shadow() const { return copies_[1 - live_.load()]; }
  uint64_t bytes() const { return bytes_; }
  ServedVersion serving() const;

  // Takes the shadow for writing (waits for passes still reading it).
  void beginUpdate();
  // Publishes the shadow as `version` and makes it live; returns the pause
  // in seconds. Only after beginUpdate().
  double switchTo(int version);
  // The update failed: the shadow is left incomplete, the live copy serves on.
  void abortUpdate();
  bool updating() const { return updating_.load(); }

  // Starts generation: a pass every `intervalSeconds` until the destructor.
  void startGeneration(double intervalSeconds);
  // Counters since the last call.
  GenerationStats takeStats();

 private:
  struct Tag {
    int version = -1;
    uint64_t checksum = 0;
    bool complete = false;
  };
  void generate(double intervalSeconds);

  uint8_t* copies_[2];
  const uint64_t bytes_;
  std::atomic<int> live_{0};
  std::atomic<bool> updating_{false};
  std::shared_mutex copyMu_[2];  // shared: a pass reads the copy; exclusive: an update writes it
  Tag tag_[2];                   // guarded by copyMu_
  mutable std::mutex pickMu_;    // a reader picks the live copy and pins it under this
  std::unique_lock<std::shared_mutex> writing_;  // the shadow, while an update holds it

  std::mutex statsMu_;
  GenerationStats stats_;
  std::atomic<bool> stop_{false};
  std::thread reader_;
};

}  // namespace tide::exec
