#pragma once
// The weight store's catalog: which versions exist, where each fragment's
// replicas live, and what state each snapshot is in. It holds no bytes: the
// store nodes hold the fragments in registered memory and the transport
// moves them; this is the bookkeeping every node and reader agrees on.
//
//   beginImport(V)   placement: each fragment on R distinct live nodes, least
//                    loaded first                          -> kImporting
//   stored(V, f, n)  a replica of fragment f is durable on node n
//   commit(V)        every replica stored: the manifest (fragment sizes,
//                    hashes, nodes) is frozen with its content hash, last
//                                                          -> kReady
//   nodeLost(n)      snapshots with a replica on n        -> kDegraded
//                    (kLost when some fragment has no replica left)
//   repairs(V)       the copies that restore R replicas on live nodes;
//                    stored() of each brings V back        -> kReady
//   acquire/release  reader leases; collect() drops versions older than the
//                    newest ready one that no lease holds and frees their
//                    space in the node segments for later versions.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace tide::sync::store {

enum class SnapshotState { kImporting, kReady, kDegraded, kLost };
const char* snapshotStateName(SnapshotState s);

struct Fragment {
  uint64_t bytes = 0;
  uint64_t hash = 0;              // XXH3-64 of the fragment's bytes
  std::vector<uint32_t> nodes;    // replicas (placement order)
  std::vector<uint64_t> offsets;  // where each replica lies in its node's segment
  std::set<uint32_t> stored;      // replicas known durable
};

struct Snapshot {
  uint64_t version = 0;
  SnapshotState state = SnapshotState::kImporting;
  std::vector<Fragment> fragments;
  uint64_t manifestHash = 0;  // set by commit: hash of the frozen manifest
  std::string manifest;       // the frozen manifest text
  uint32_t leases = 0;
};

struct Repair {
  uint32_t fragment = 0;
  uint32_t from = 0;  // a live node that holds a stored replica
  uint32_t to = 0;    // a live node without one
};

class SnapshotCatalog {
 public:
  // Each node's segment holds `capacityBytes` (fragments are 64-byte aligned).
  SnapshotCatalog(uint32_t nodes, uint32_t replicas, uint64_t capacityBytes = UINT64_MAX);

  // Places fragments of these sizes/hashes; fails when fewer than R nodes
  // live (kUnavailable) or their segments have no room (kResourceExhausted).
  Result<const Snapshot*> beginImport(uint64_t version, const std::vector<uint64_t>& bytes,
                                      const std::vector<uint64_t>& hashes);
  Status stored(uint64_t version, uint32_t fragment, uint32_t node);
  Status commit(uint64_t version);
  // Drops a version still importing (its placement is freed); kNotFound /
  // kFailedPrecondition for one that does not exist or was committed.
  Status abortImport(uint64_t version);
  Status nodeLost(uint32_t node);
  Result<std::vector<Repair>> repairs(uint64_t version);

  // Newest kReady or kDegraded version (readable); kNotFound when none.
  Result<uint64_t> latestReadable() const;
  Status acquire(uint64_t version);
  Status release(uint64_t version);
  // Drops unleased versions older than the newest ready one; returns them.
  std::vector<uint64_t> collect();

  // A live node holding a stored replica of the fragment (first in placement order).
  Result<uint32_t> source(uint64_t version, uint32_t fragment) const;
  Result<const Snapshot*> snapshot(uint64_t version) const;
  bool live(uint32_t node) const { return node < live_.size() && live_[node]; }
  uint32_t nodes() const { return static_cast<uint32_t>(live_.size()); }
  uint32_t replicas() const { return replicas_; }
  const std::map<uint64_t, Snapshot>& snapshots() const { return snapshots_; }

 private:
  Result<Snapshot*> find(uint64_t version);
  void refreshState(Snapshot& s) const;

  uint32_t replicas_;
  std::vector<bool> live_;
  std::vector<uint64_t> load_;  // bytes held per node (placement balance)
  // Free extents (offset -> bytes) of each node's segment, first fit.
  std::vector<std::map<uint64_t, uint64_t>> free_;
  bool place(Fragment& f, uint32_t node);
  void unplace(const Fragment& f);
  std::vector<uint32_t> byLoad() const;  // node ids, least loaded first
  std::map<uint64_t, Snapshot> snapshots_;
};

}  // namespace tide::sync::store
