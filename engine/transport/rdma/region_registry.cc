#include "engine/transport/rdma/region_registry.h"

namespace tide::transport::rdma {

std::string RegionRegistry::regionKey(int rank, uint32_t id) const {
  return prefix_ + "regions/" + std::to_string(rank) + "/" + std::to_string(id);
}

std::string RegionRegistry::rankKey(const char* what, int rank) const {
  return prefix_ + what + "/" + std::to_string(rank);
}

Status RegionRegistry::publish(const RemoteRegion& d) {
  // The descriptor first, then the live mark: whoever sees it live finds it.
  TIDE_RETURN_IF_ERROR(store_.set(regionKey(rank_, d.id), d.serialize()));
  return store_.add(regionKey(rank_, d.id) + "/live", 1).status();
}

Status RegionRegistry::retract(uint32_t id) {
  // Dead first, then the epoch: a reader that sees the new epoch sees it dead.
  TIDE_RETURN_IF_ERROR(store_.add(regionKey(rank_, id) + "/live", -1).status());
  return store_.add(rankKey("epoch", rank_), 1).status();
}

Status RegionRegistry::beat() {
  return store_.add(rankKey("alive", rank_), 1).status();
}

Status RegionRegistry::markGone() {
  return store_.add(rankKey("gone", rank_), 1).status();
}

Result<int64_t> RegionRegistry::epoch(int rank) {
  return store_.add(rankKey("epoch", rank), 0);
}

Result<bool> RegionRegistry::live(int rank, uint32_t id) {
  TIDE_ASSIGN_OR_RETURN(int64_t n, store_.add(regionKey(rank, id) + "/live", 0));
  return n > 0;
}

Result<int64_t> RegionRegistry::beats(int rank) {
  return store_.add(rankKey("alive", rank), 0);
}

Result<bool> RegionRegistry::gone(int rank) {
  TIDE_ASSIGN_OR_RETURN(int64_t n, store_.add(rankKey("gone", rank), 0));
  return n > 0;
}

RegionVerdict RegionRegistry::compare(const RemoteRegion& c, const RemoteRegion& p) {
  RegionVerdict v;
  std::string what = "region " + std::to_string(c.id) + " of rank " + std::to_string(c.rank);
  if (c.rank != p.rank || c.id != p.id) {
    v.status = TIDE_ERROR(Code::kNotFound, what + " is not the region its owner registered");
  } else if (c.key != p.key) {
    v.status = TIDE_ERROR(Code::kPermissionDenied,
                          "access key of " + what + " does not match the key its owner published");
  } else if (c.base != p.base || c.rkeys != p.rkeys) {
    v.status = TIDE_ERROR(Code::kPermissionDenied,
                          "base address or rkeys of " + what +
                              " do not match what its owner registered (stale descriptor?)");
  }
  v.publishedSize = p.size;
  return v;
}

Result<RegionVerdict> RegionRegistry::verify(const RemoteRegion& d, double timeoutSeconds) {
  // The epoch before the live mark, so a deregistration in between shows up
  // as a newer epoch on the next submit.
  TIDE_ASSIGN_OR_RETURN(int64_t e, epoch(d.rank));
  TIDE_ASSIGN_OR_RETURN(bool isLive, live(d.rank, d.id));
  if (!isLive) {
    RegionVerdict v;
    // A rank that shut down took its regions with it: that is a lost peer
    // (kUnavailable), the consequence of whatever made it leave, not a bad
    // descriptor.
    TIDE_ASSIGN_OR_RETURN(bool left, gone(d.rank));
    v.status = left
                   ? TIDE_ERROR(Code::kUnavailable, "rank " + std::to_string(d.rank) +
                                                        " has shut down (region " +
                                                        std::to_string(d.id) + " went with it)")
                   : TIDE_ERROR(Code::kNotFound, "region " + std::to_string(d.id) + " of rank " +
                                                     std::to_string(d.rank) +
                                                     " is not registered (never, or deregistered)");
    v.epoch = e;
    return v;
  }
  auto raw = store_.get(regionKey(d.rank, d.id), timeoutSeconds);
  if (!raw.isOk())
    return raw.status().withContext("published descriptor of region " + std::to_string(d.id) +
                                    " of rank " + std::to_string(d.rank));
  auto published = RemoteRegion::deserialize(*raw);
  if (!published.isOk())
    return published.status().withContext("published descriptor of region " + std::to_string(d.id) +
                                          " of rank " + std::to_string(d.rank));
  RegionVerdict v = compare(d, *published);
  v.epoch = e;
  return v;
}

}  // namespace tide::transport::rdma
