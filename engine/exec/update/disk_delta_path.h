#pragma once
// The disk-delta strategy on the real executor. The transfer plan is p2p's
// (what every inference rank needs from which trainer); nothing crosses the
// network. Per step V:
//   trainer rank: convert its shard into its source space (the plan's local
//     tasks), write that slice's file for V to the shared directory (delta
//     V-1 -> V, or a full base every K versions), then all trainers commit
//     V (manifest last; engine/sync/disk_delta_writer.h);
//   inference rank: wait for the commit, bring a mirror of each trainer
//     slice it needs to V from the files (delta chain, checked by hash), and
//     copy its regions from the mirrors into its shard.
// Version 0 is written as a base during setup and read by every inference
// rank, like a new engine rebuilding from the directory.

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/kv_store.h"
#include "engine/exec/executor/rank_layout.h"
#include "engine/exec/executor/rank_schedule.h"
#include "engine/sync/disk_delta_reader.h"
#include "engine/sync/disk_delta_writer.h"

namespace tide::exec {

struct DiskDeltaCounters {
  uint64_t fileBytes = 0;   // bytes written to files (trainers)
  uint64_t sliceBytes = 0;  // full slice bytes (what a full write costs)
  uint64_t bytesRead = 0;   // bytes read from files (inference ranks)
  uint64_t elements = 0, changed = 0;
};

struct DiskDeltaPathOptions {
  std::string dir;
  uint32_t baseEvery = 8;
  double timeoutSeconds = 120;
};

class DiskDeltaPath {
 public:
  using Buffers = std::array<uint8_t*, kSpaceCount>;

  static Result<std::unique_ptr<DiskDeltaPath>> create(const plan::TransferPlan& plan,
                                                       const std::vector<RankLayout>& layouts,
                                                       const RankSchedule& schedule, Store& store,
                                                       DiskDeltaPathOptions options);

  // Runs this rank's part of version `version` (trainers: their shard must
  // hold it already). Fails with the first error; an inference rank's shard
  // then still holds the previous complete version.
  Status step(uint64_t version, const Buffers& buffers, DiskDeltaCounters& counters);

  uint64_t mirrorBytes() const;

 private:
  struct Source {
    int rank = -1;
    plan::Space space = plan::Space::kTrain;  // the trainer's slice space
    std::vector<uint8_t> mirror;              // the trainer's slice space, same layout
    std::unique_ptr<sync::DiskDeltaReader> reader;
    std::optional<uint64_t> current;
    std::vector<std::span<uint8_t>> targets;
  };
  struct Copy {
    size_t source = 0;
    std::vector<Run> runs;  // mirror offsets -> shard offsets
  };

  DiskDeltaPath(const RankSchedule& schedule, Store& store, DiskDeltaPathOptions options)
      : schedule_(schedule), store_(store), options_(std::move(options)) {}
  Status writeStep(uint64_t version, const Buffers& buffers, DiskDeltaCounters& counters);
  Status readStep(uint64_t version, const Buffers& buffers, DiskDeltaCounters& counters);

  const RankSchedule& schedule_;
  Store& store_;
  DiskDeltaPathOptions options_;
  uint32_t trainers_ = 0;
  int writerIndex_ = -1;  // this rank's index among the trainers
  plan::Space sliceSpace_ = plan::Space::kTrain;
  std::vector<uint64_t> sliceOffsets_;  // placed offsets of this rank's slice
  std::unique_ptr<sync::DiskDeltaWriter> writer_;
  std::vector<Source> sources_;
  std::vector<Copy> copies_;
};

}  // namespace tide::exec
