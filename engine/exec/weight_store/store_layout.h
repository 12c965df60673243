#pragma once
// What every rank of a store run computes alike from the plan: the trainer
// slices, their cut into fragments (global ids, trainer by trainer), the
// store nodes and their hosts, the readers; and the keys of the records ranks
// exchange through the key-value store during one version (store_records.h).

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/kv_store.h"
#include "engine/core/status.h"
#include "engine/exec/executor/rank_layout.h"
#include "engine/exec/weight_store/store_records.h"
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

// Keys of version V's records.
std::string storeKey(uint64_t version, const std::string& what);
// Where attempt `attempt` of importing version V places its fragments.
std::string placeKey(uint64_t version, uint32_t attempt);
// The version the coordinator leased to a joining engine.
std::string joinKey();

}  // namespace tide::exec
