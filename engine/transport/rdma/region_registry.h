#pragma once
// What each rank publishes about its registered regions, and how an
// initiator checks a descriptor before any work request reaches the NIC.
//
// Trust model. With one-sided RDMA the target's CPU never sees a request, and
// the NIC checks only the rkey and the MR's bounds. A wrong request that the
// NIC rejects also moves both RC queue pairs to the error state, so a forged
// or stale descriptor would cost a connection. Therefore the initiator
// refuses such requests itself, before posting:
//  * registerRegion publishes the descriptor (rank, id, size, base, key,
//    rkeys) in the rendezvous store and marks the region live;
//  * importRegion compares the descriptor with the published one: an id the
//    owner never published (or deregistered) is kNotFound, a different key,
//    base or rkey is kPermissionDenied, and requests are bounded by the
//    published size, not the claimed one (kOutOfRange);
//  * deregisterRegion marks the region dead and bumps the owner's epoch
//    counter; submit reads each target's epoch (one non-blocking store read
//    per peer) and re-checks imported regions of a peer whose epoch moved.
// The store is the job's trusted control plane; the key protects against
// stale and mismatched descriptors, not against a rank that lies in the store.
//
// Liveness: every rank bumps a heartbeat counter (beat()) from its progress
// thread and marks itself gone when it shuts down, so that an initiator can
// tell a peer that exited (its kernel freed the MRs: remote access error)
// from a genuine access error.

#include <cstdint>
#include <string>

#include "engine/core/kv_store.h"
#include "engine/core/status.h"
#include "engine/transport/transport.h"

namespace tide::transport::rdma {

// The result of checking one descriptor against what its owner published.
struct RegionVerdict {
  Status status;               // ok, kNotFound or kPermissionDenied
  uint64_t publishedSize = 0;  // bound for requests when status is ok
  int64_t epoch = -1;          // owner's deregistration epoch when checked
};

class RegionRegistry {
 public:
  RegionRegistry(Store& store, std::string prefix, int rank)
      : store_(store), prefix_(std::move(prefix)), rank_(rank) {}

  // Owner side.
  [[nodiscard]] Status publish(const RemoteRegion& descriptor);
  [[nodiscard]] Status retract(uint32_t id);
  [[nodiscard]] Status beat();
  [[nodiscard]] Status markGone();

  // Initiator side (non-blocking store reads).
  [[nodiscard]] Result<int64_t> epoch(int rank);
  [[nodiscard]] Result<RegionVerdict> verify(const RemoteRegion& descriptor, double timeoutSeconds);
  [[nodiscard]] Result<bool> live(int rank, uint32_t id);
  [[nodiscard]] Result<int64_t> beats(int rank);
  [[nodiscard]] Result<bool> gone(int rank);

  // The verdict for a descriptor given the one its owner published.
  static RegionVerdict compare(const RemoteRegion& claimed, const RemoteRegion& published);

 private:
  std::string regionKey(int rank, uint32_t id) const;
  std::string rankKey(const char* what, int rank) const;

  Store& store_;
  std::string prefix_;
  int rank_;
};

}  // namespace tide::transport::rdma
