#pragma once
// On-disk layout of the disk-delta strategy, in one shared directory:
//   v<V>.r<rank>.base    rank's full slice of version V (every K steps)
//   v<V>.r<rank>.delta   rank's delta frame V-1 -> V
//   v<V>.manifest        written last (temporary + fsync + rename): version V
//                        exists for readers iff its manifest parses and checks.
// The manifest lists every rank file with its size and XXH3-64, and the XXH3
// of the rank's complete slice at version V, so a reader checks both what it
// reads and what it ends with. Text, one record per line, the last line the
// XXH3 of all lines before it (a torn or edited manifest is rejected).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace tide::sync {

enum class DiskDeltaKind : uint8_t { kBase, kDelta };

struct DiskDeltaFile {
  uint32_t rank = 0;
  DiskDeltaKind kind = DiskDeltaKind::kDelta;
  uint64_t bytes = 0;        // file size
  uint64_t fileHash = 0;     // XXH3-64 of the file
  uint64_t versionHash = 0;  // XXH3-64 of the rank's slice at this version

  std::string encode() const;  // one line (no newline), also the commit message between ranks
  static Result<DiskDeltaFile> decode(const std::string& line);
};

struct DiskDeltaManifest {
  uint64_t version = 0;
  uint64_t baseVersion = 0;  // the base this version's chain starts from (== version for a base)
  uint32_t ranks = 0;
  std::vector<DiskDeltaFile> files;  // one per rank, by rank

  bool isBase() const { return baseVersion == version; }
  std::string serialize() const;
  static Result<DiskDeltaManifest> parse(const std::string& text);
  const DiskDeltaFile* file(uint32_t rank) const;
};

std::string rankFileName(uint64_t version, uint32_t rank, DiskDeltaKind kind);
std::string manifestName(uint64_t version);
// Version of a manifest file name, or nullopt for any other name.
std::optional<uint64_t> manifestVersion(const std::string& fileName);

}  // namespace tide::sync
