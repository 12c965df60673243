#pragma once
// The weight store's records that ranks exchange through the key-value store
// during one version (plain text), and their decoding. A record comes from
// another process: every decoder fails with kDataLoss on malformed text and
// never throws.

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/status.h"

namespace tide::exec {

// Where each replica of each fragment lies: node and offset in its segment.
struct Placement {
  std::vector<std::vector<std::pair<uint32_t, uint64_t>>> replicas;  // per fragment
};

// A trainer's report before placement: its fragments' and out-groups' hashes.
struct WriterHashes {
  std::vector<uint64_t> fragments;
  std::map<std::pair<int, uint32_t>, uint64_t> groups;  // (reader rank, unit) -> XXH3
};

// What the coordinator publishes last: the frozen manifest with its hash,
// the placement and every group's hash.
struct CommitRecord {
  uint64_t manifestHash = 0;
  std::string manifest;
  Placement placement;
  std::map<std::pair<int, uint32_t>, uint64_t> groups;
};

std::string encodePlacement(const Placement& p);
Result<Placement> decodePlacement(const std::string& text, uint32_t fragments);
std::string encodeHashes(const WriterHashes& h);
Result<WriterHashes> decodeHashes(const std::string& text);
std::string encodeCommit(const CommitRecord& c);
Result<CommitRecord> decodeCommit(const std::string& text, uint32_t fragments);

// A trainer's report of one import attempt: "ok", "error <why>", or
// "lost N n1 .. nN" naming the store nodes (each < `nodes`) it could not write.
struct StoredReport {
  bool ok = false;
  std::string error;           // "error": the writer's status
  std::vector<uint32_t> lost;  // "lost": the nodes
};
Result<StoredReport> decodeStoredReport(const std::string& text, uint32_t nodes);
// A reader's report of one version: "lost N n1 .. nN", the nodes it found gone.
Result<std::vector<uint32_t>> decodeReadReport(const std::string& text);

}  // namespace tide::exec
