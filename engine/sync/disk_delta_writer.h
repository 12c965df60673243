#pragma once
// Disk-delta strategy, trainer side. Each trainer rank writes, per step, its
// slice's delta frame (V-1 -> V, engine/sync/delta) or, every K steps, its
// full slice, to a shared directory; when every rank's file is durable one
// rank commits the version by writing its manifest last (see
// disk_delta_manifest.h). A writer killed before that leaves no version
// behind, only files a retry overwrites.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/core/kv_store.h"
#include "engine/core/status.h"
#include "engine/sync/delta/delta_codec.h"
#include "engine/sync/disk_delta_io.h"
#include "engine/sync/disk_delta_manifest.h"

namespace tide::sync {

// One rank's slice: its tensors in a fixed order (the same on the trainer
// and the inference side) and their grouping into frame items (an MoE
// expert's tensors form one item; empty = one item per tensor).
struct DiskDeltaSlice {
  std::vector<uint64_t> tensorBytes;
  std::vector<uint32_t> elemBytes;
  std::vector<std::vector<uint32_t>> items;

  uint64_t totalBytes() const;
  Status validate() const;
  std::vector<std::vector<uint32_t>> effectiveItems() const;
};

struct DiskDeltaOptions {
  std::string dir;
  uint32_t baseEvery = 8;  // version V is written in full when V % baseEvery == 0
  DeltaOptions codec;
  FileIoOptions io;
};

struct DiskDeltaWriteStats {
  DiskDeltaFile record;      // what goes into the manifest for this rank
  uint64_t baseVersion = 0;  // the base the version's chain starts from
  uint64_t sliceBytes = 0;   // full slice size (what a full write costs)
  uint64_t changed = 0, elements = 0;
  double encodeSeconds = 0, writeSeconds = 0;
  double changedFraction() const { return elements ? double(changed) / double(elements) : 0; }
};

// XXH3-64 of a slice's bytes, tensor after tensor.
uint64_t sliceHash(std::span<const std::span<const uint8_t>> tensors);

class DiskDeltaWriter {
 public:
  DiskDeltaWriter(DiskDeltaOptions options, uint32_t rank, DiskDeltaSlice slice);

  // Writes this rank's file for `version`: in full when version % baseEvery
  // == 0, else the delta from the previous version written (or seeded),
  // which must be version - 1. The new version becomes the previous one only
  // once its file is durable.
  Result<DiskDeltaWriteStats> writeStep(uint64_t version,
                                        std::span<const std::span<const uint8_t>> tensors);

  // Sets the previous version without writing (a writer restarted after a
  // crash, seeded from a reader's rebuild). baseVersion: that version's base.
  Status seed(uint64_t version, uint64_t baseVersion,
              std::span<const std::span<const uint8_t>> tensors);

  uint32_t rank() const { return rank_; }
  const DiskDeltaOptions& options() const { return options_; }
  const DiskDeltaSlice& slice() const { return slice_; }

 private:
  DiskDeltaOptions options_;
  uint32_t rank_;
  DiskDeltaSlice slice_;
  std::vector<std::vector<uint8_t>> prev_;  // previous version's tensors
  bool havePrev_ = false;
  uint64_t prevVersion_ = 0;
  uint64_t lastBase_ = 0;
  std::vector<uint8_t> scratch_;
};

// Commits `version`: writes its manifest last, durably. Every rank file must
// be present with the recorded size (cheap check; hashes are the readers').
Status commitVersion(const DiskDeltaOptions& options, uint64_t version, uint64_t baseVersion,
                     std::vector<DiskDeltaFile> records);

// Multi-process commit: every rank publishes its record under
// "disk-delta/<version>/<rank>"; rank 0 waits (at most timeoutSeconds) for
// all of them, then commits. A rank that died leaves the version uncommitted
// and rank 0 with a kTimeout error.
Status publishAndCommit(Store& store, const DiskDeltaOptions& options, uint32_t ranks,
                        uint64_t version, const DiskDeltaWriteStats& mine, double timeoutSeconds);

}  // namespace tide::sync
