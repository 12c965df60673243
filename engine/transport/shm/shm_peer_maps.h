#pragma once
// This rank's mappings of peers' memfd-backed regions. A region is mapped on
// its first use (MAP_SHARED | MAP_POPULATE, so later copies take no page
// faults) and kept until its owner deregisters it or the peer goes away; the
// copy itself is then a plain memcpy. Copies hold a reference, so dropping a
// mapping never unmaps memory a copy is using.

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include "engine/core/fd.h"
#include "engine/core/status.h"
#include "engine/transport/shm/shm_segment.h"

namespace tide::transport::shm {

struct PeerMapping {
  Mapping map;
  char* base = nullptr;  // the region's byte 0
  uint64_t size = 0;
};

class PeerMappings {
 public:
  // The mapping of region `id` of rank `peer` (process `pid`), described by
  // `slot` which the caller holds pinned; maps it on first use.
  Result<std::shared_ptr<const PeerMapping>> get(pid_t pid, int peer, uint32_t id,
                                                 const RegionInfo& slot);
  // Drops every mapping for which stillValid(peer, id) is false.
  void sweep(const std::function<bool(int peer, uint32_t id)>& stillValid);
  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<int, uint32_t>, std::shared_ptr<const PeerMapping>> maps_;
};

}  // namespace tide::transport::shm
