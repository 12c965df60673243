#pragma once
// The store's coordinator (rank 0 of a store run): owns the SnapshotCatalog
// and drives one version through it with the ranks' records in the
// key-value store (engine/exec/weight_store/store_path.h has the whole protocol). It
// moves no bytes itself: re-replication copies are returned to the caller,
// which runs them on the transport and reports them done.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/core/kv_store.h"
#include "engine/exec/weight_store/store_layout.h"
#include "engine/sync/store/snapshot_catalog.h"

namespace tide::exec {

struct RepairCopy {
  uint64_t version = 0;
  uint32_t fragment = 0;
  uint32_t from = 0, to = 0;  // nodes
  uint64_t fromOffset = 0, toOffset = 0, bytes = 0;
};

class StoreCoordinator {
 public:
  StoreCoordinator(const StoreLayout& layout, Store& store, double timeoutSeconds,
                   std::string catalogJson);

  // Gathers the writers' hashes, places version V, publishes the placement.
  Status place(uint64_t version);
  // Gathers the writers' "stored" reports of one attempt and publishes its
  // outcome: true when every replica is stored. A node that failed a writer
  // is marked lost and V is placed again on the live nodes (false: the
  // writers retry); when it cannot be (too few live nodes), V is dropped
  // from the catalog, and writers and readers are told why.
  Result<bool> settle(uint64_t version, uint32_t attempt);
  // Commits V (every replica stored) and publishes the commit record.
  Status commit(uint64_t version);
  // Joining inference ranks: they read no version up to `step`.
  void setJoin(int step, std::vector<int> ranks);
  // After the join step: leases the newest readable version to each joining
  // rank and publishes it (joinKey()); released once they read the next one.
  Status grantJoin(size_t ranks);
  // Gathers the readers' reports: moves their leases from V-1 to V,
  // collects versions nobody holds, marks lost nodes and returns the copies
  // that restore R replicas of every snapshot still kept.
  Result<std::vector<RepairCopy>> afterRead(uint64_t version);
  // The copies landed: replicas stored, the catalog written out (catalogJson).
  Status finish(uint64_t version, const std::vector<RepairCopy>& done);

  const sync::store::SnapshotCatalog& catalog() const { return catalog_; }

 private:
  Status writeCatalog() const;
  Status placeAttempt(uint64_t version, uint32_t attempt);
  Result<bool> gatherStored(uint64_t version, uint32_t attempt);
  bool reads(int rank, uint64_t version) const;
  void note(const std::string& event);

  const StoreLayout& layout_;
  Store& store_;
  double timeout_;
  std::string catalogJson_;
  sync::store::SnapshotCatalog catalog_;
  std::map<std::pair<int, uint32_t>, uint64_t> groups_;  // of the version being imported
  std::vector<uint64_t> importBytes_, importHashes_;     // its fragments
  std::vector<std::string> events_;                      // state changes, for `tide store`
  std::map<uint64_t, uint32_t> held_;                    // leases held for readers, per version
  int joinStep_ = -1;
  std::vector<int> joinRanks_;
  uint64_t failovers_ = 0, repairedBytes_ = 0;
};

}  // namespace tide::exec
