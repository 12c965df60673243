#pragma once
// Disk-delta strategy, inference side. A reader brings its slice (the same
// DiskDeltaSlice as the matching trainer rank) to a committed version: from
// the version it holds by applying the delta chain, or, when it holds none
// (a new engine) or the chain is broken, by loading the latest base at or
// before the target and applying the deltas after it. Every file is checked
// against its manifest record before it touches the targets, and every step
// leaves the targets on a complete version whose slice hash is checked, so a
// truncated or corrupt file stops the update with the targets on the last
// complete version, never a mix.

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "engine/core/status.h"
#include "engine/sync/disk_delta_writer.h"

namespace tide::sync {

struct DiskDeltaReadStats {
  uint64_t filesRead = 0;
  uint64_t bytesRead = 0;
  uint64_t basesLoaded = 0;
  uint64_t deltasApplied = 0;
  double seconds = 0;
};

class DiskDeltaReader {
 public:
  DiskDeltaReader(DiskDeltaOptions options, uint32_t rank, DiskDeltaSlice slice);

  // Highest committed version (valid manifest); kNotFound when there is none.
  Result<uint64_t> latest() const;
  Result<DiskDeltaManifest> manifest(uint64_t version) const;

  // Moves `targets` to version `to`. `current` is the version they hold
  // (nullopt: nothing usable) and is updated after every complete step, so
  // on error it names the complete version the targets hold.
  Status update(std::span<const std::span<uint8_t>> targets, std::optional<uint64_t>& current,
                uint64_t to);

  const DiskDeltaReadStats& stats() const { return stats_; }

 private:
  Status checkTargets(std::span<const std::span<uint8_t>> targets) const;
  Result<std::vector<uint8_t>> readChecked(const DiskDeltaManifest& m) const;
  Status step(std::span<const std::span<uint8_t>> targets, const DiskDeltaManifest& m,
              std::optional<uint64_t>& current);

  DiskDeltaOptions options_;
  uint32_t rank_;
  DiskDeltaSlice slice_;
  DiskDeltaReadStats stats_;
};

// Removes the files of versions older than the newest committed base at or
// before `keepFrom` (readers that hold an older version then rebuild from a
// base). Returns the number of files removed.
Result<uint64_t> pruneBefore(const DiskDeltaOptions& options, uint64_t keepFrom);

}  // namespace tide::sync
