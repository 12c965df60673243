#pragma once
// What every rank of a store run computes alike from the plan: the trainer
// slices, their cut into fragments (global ids, trainer by trainer), the
// store nodes and their hosts, the readers; and the records ranks exchange
// through the key-value store during one version (plain text).

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/kv_store.h"
#include "engine/core/status.h"
#include "engine/exec/rank_layout.h"
#include "engine/plan/transfer_plan.h"

namespace tide::exec {

struct StoreLayout {
  uint32_t nodes = 0;
  uint32_t replicas = 0;
  uint64_t fragmentBytes = 0;
  uint64_t segmentBytes = 0;
  std::vector<int> writerRank;          // writer index -> rank
  std::vector<int> writerOf;            // rank -> writer index, -1 if none
  std::vector<plan::Space> sliceSpace;  // per writer: staging, or train without one
  std::vector<uint64_t> sliceBytes;     // per writer
  std::vector<uint32_t> fragBase;       // per writer + 1: first global fragment id
  std::vector<int> readerRanks;         // inference ranks

  // segmentBytes 0: room for three versions' shares (the one readers hold, the
  // one being imported, slack for re-replication and fragmentation).
  static Result<StoreLayout> build(const plan::TransferPlan& plan,
                                   const std::vector<RankLayout>& layouts, uint32_t nodes,
                                   uint32_t replicas, uint64_t fragmentBytes,
                                   uint64_t segmentBytes);

  uint32_t fragments() const { return fragBase.back(); }
  uint32_t writerOfFragment(uint32_t f) const;
  uint64_t sliceOffset(uint32_t f) const;
  uint64_t bytesOf(uint32_t f) const;
  int hostOf(uint32_t node) const { return static_cast<int>(node); }
};

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

// Keys of version V's records.
std::string storeKey(uint64_t version, const std::string& what);
// Where attempt `attempt` of importing version V places its fragments.
std::string placeKey(uint64_t version, uint32_t attempt);
// The version the coordinator leased to a joining engine.
std::string joinKey();

}  // namespace tide::exec
