#include "engine/sync/store/snapshot_catalog.h"

#include <xxhash.h>

#include <algorithm>
#include <numeric>
#include <sstream>

namespace tide::sync::store {

const char* snapshotStateName(SnapshotState s) {
  switch (s) {
    case SnapshotState::kImporting:
      return "IMPORTING";
    case SnapshotState::kReady:
      return "READY";
    case SnapshotState::kDegraded:
      return "DEGRADED";
    case SnapshotState::kLost:
      return "LOST";
  }
  return "?";
}

SnapshotCatalog::SnapshotCatalog(uint32_t nodes, uint32_t replicas, uint64_t capacityBytes)
    : replicas_(replicas), live_(nodes, true), load_(nodes, 0), free_(nodes) {
  for (auto& f : free_) f[0] = capacityBytes;
}

std::vector<uint32_t> SnapshotCatalog::byLoad() const {
  std::vector<uint32_t> order(live_.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return load_[a] < load_[b]; });
  return order;
}

namespace {
uint64_t slotBytes(uint64_t bytes) {
  return (std::max<uint64_t>(bytes, 1) + 63) / 64 * 64;
}
}  // namespace

bool SnapshotCatalog::place(Fragment& f, uint32_t node) {
  const uint64_t need = slotBytes(f.bytes);
  auto& free = free_[node];
  for (auto it = free.begin(); it != free.end(); ++it) {
    if (it->second < need) continue;
    const uint64_t at = it->first, left = it->second - need;
    free.erase(it);
    if (left > 0) free[at + need] = left;
    f.nodes.push_back(node);
    f.offsets.push_back(at);
    load_[node] += f.bytes;
    return true;
  }
  return false;
}

void SnapshotCatalog::unplace(const Fragment& f) {
  for (size_t i = 0; i < f.nodes.size(); ++i) {
    const uint32_t n = f.nodes[i];
    load_[n] -= std::min(load_[n], f.bytes);
    auto& free = free_[n];
    auto [it, _] = free.emplace(f.offsets[i], slotBytes(f.bytes));
    // Merge with the neighbours so large fragments fit again.
    if (auto next = std::next(it); next != free.end() && it->first + it->second == next->first) {
      it->second += next->second;
      free.erase(next);
    }
    if (it != free.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second == it->first) {
        prev->second += it->second;
        free.erase(it);
      }
    }
  }
}

Result<Snapshot*> SnapshotCatalog::find(uint64_t version) {
  auto it = snapshots_.find(version);
  if (it == snapshots_.end()) {
    return TIDE_ERROR(Code::kNotFound, "store: no snapshot of version " + std::to_string(version));
  }
  return &it->second;
}

Result<const Snapshot*> SnapshotCatalog::snapshot(uint64_t version) const {
  auto it = snapshots_.find(version);
  if (it == snapshots_.end()) {
    return TIDE_ERROR(Code::kNotFound, "store: no snapshot of version " + std::to_string(version));
  }
  return &it->second;
}

Result<const Snapshot*> SnapshotCatalog::beginImport(uint64_t version,
                                                     const std::vector<uint64_t>& bytes,
                                                     const std::vector<uint64_t>& hashes) {
  if (snapshots_.count(version)) {
    return TIDE_ERROR(Code::kAlreadyExists, "store: version " + std::to_string(version) +
                                                " exists (snapshots are immutable)");
  }
  if (bytes.size() != hashes.size()) {
    return TIDE_ERROR(Code::kInvalidArgument, "store: sizes and hashes differ in count");
  }
  const auto liveCount = static_cast<uint32_t>(std::count(live_.begin(), live_.end(), true));
  if (replicas_ == 0 || liveCount < replicas_) {
    return TIDE_ERROR(Code::kUnavailable, "store: " + std::to_string(liveCount) +
                                              " live nodes cannot hold " +
                                              std::to_string(replicas_) + " replicas");
  }
  Snapshot s;
  s.version = version;
  for (size_t f = 0; f < bytes.size(); ++f) {
    Fragment fr;
    fr.bytes = bytes[f];
    fr.hash = hashes[f];
    // Least-loaded live nodes with room, distinct by construction.
    const std::vector<uint32_t> order = byLoad();
    for (uint32_t n : order) {
      if (fr.nodes.size() == replicas_) break;
      if (live_[n]) (void)place(fr, n);
    }
    s.fragments.push_back(std::move(fr));
    if (s.fragments.back().nodes.size() < replicas_) {
      for (const Fragment& done : s.fragments) unplace(done);
      return TIDE_ERROR(Code::kResourceExhausted,
                        "store: no room for " + std::to_string(replicas_) + " replicas of " +
                            std::to_string(bytes[f]) + " bytes (version " +
                            std::to_string(version) + ", fragment " + std::to_string(f) + ")");
    }
  }
  auto [it, _] = snapshots_.emplace(version, std::move(s));
  return &it->second;
}

Status SnapshotCatalog::stored(uint64_t version, uint32_t fragment, uint32_t node) {
  TIDE_ASSIGN_OR_RETURN(Snapshot * s, find(version));
  if (fragment >= s->fragments.size()) {
    return TIDE_ERROR(Code::kInvalidArgument, "store: no fragment " + std::to_string(fragment));
  }
  Fragment& f = s->fragments[fragment];
  if (std::find(f.nodes.begin(), f.nodes.end(), node) == f.nodes.end()) {
    return TIDE_ERROR(Code::kInvalidArgument, "store: fragment " + std::to_string(fragment) +
                                                  " is not placed on node " + std::to_string(node));
  }
  if (!live(node)) {
    return TIDE_ERROR(Code::kUnavailable, "store: node " + std::to_string(node) + " is lost");
  }
  f.stored.insert(node);
  if (s->state != SnapshotState::kImporting) refreshState(*s);
  return Status::ok();
}

Status SnapshotCatalog::commit(uint64_t version) {
  TIDE_ASSIGN_OR_RETURN(Snapshot * s, find(version));
  if (s->state != SnapshotState::kImporting) {
    return TIDE_ERROR(Code::kFailedPrecondition,
                      "store: version " + std::to_string(version) + " is already committed");
  }
  std::ostringstream m;
  m << "tide-snapshot v1\nversion " << version << "\nfragments " << s->fragments.size() << "\n";
  for (size_t i = 0; i < s->fragments.size(); ++i) {
    const Fragment& f = s->fragments[i];
    if (f.stored.size() < f.nodes.size()) {
      return TIDE_ERROR(Code::kFailedPrecondition,
                        "store: version " + std::to_string(version) + " fragment " +
                            std::to_string(i) + " has " + std::to_string(f.stored.size()) + " of " +
                            std::to_string(f.nodes.size()) + " replicas stored");
    }
    m << i << ' ' << f.bytes << ' ' << f.hash << '\n';
  }
  s->manifest = m.str();
  s->manifestHash = XXH3_64bits(s->manifest.data(), s->manifest.size());
  s->state = SnapshotState::kReady;
  refreshState(*s);  // a node may have been lost while importing
  return Status::ok();
}

Status SnapshotCatalog::abortImport(uint64_t version) {
  TIDE_ASSIGN_OR_RETURN(Snapshot * s, find(version));
  if (s->state != SnapshotState::kImporting) {
    return TIDE_ERROR(Code::kFailedPrecondition,
                      "store: version " + std::to_string(version) + " is committed");
  }
  for (const Fragment& f : s->fragments) unplace(f);
  snapshots_.erase(version);
  return Status::ok();
}

void SnapshotCatalog::refreshState(Snapshot& s) const {
  if (s.state == SnapshotState::kImporting) return;
  bool degraded = false;
  for (const Fragment& f : s.fragments) {
    size_t good = 0;
    for (uint32_t n : f.stored) good += live(n) ? 1 : 0;
    if (good == 0) {
      s.state = SnapshotState::kLost;
      return;
    }
    if (good < replicas_) degraded = true;
  }
  s.state = degraded ? SnapshotState::kDegraded : SnapshotState::kReady;
}

Status SnapshotCatalog::nodeLost(uint32_t node) {
  if (node >= live_.size()) {
    return TIDE_ERROR(Code::kInvalidArgument, "store: no node " + std::to_string(node));
  }
  live_[node] = false;
  for (auto& [v, s] : snapshots_) refreshState(s);
  return Status::ok();
}

Result<std::vector<Repair>> SnapshotCatalog::repairs(uint64_t version) {
  TIDE_ASSIGN_OR_RETURN(Snapshot * s, find(version));
  if (s->state == SnapshotState::kLost) {
    return TIDE_ERROR(Code::kDataLoss, "store: version " + std::to_string(version) +
                                           " lost every replica of a fragment");
  }
  std::vector<Repair> out;
  for (uint32_t i = 0; i < s->fragments.size(); ++i) {
    Fragment& f = s->fragments[i];
    std::vector<uint32_t> good;
    for (uint32_t n : f.stored) {
      if (live(n)) good.push_back(n);
    }
    if (good.empty() || good.size() >= replicas_) continue;
    size_t missing = replicas_ - good.size();
    const std::vector<uint32_t> order = byLoad();
    for (uint32_t n : order) {
      if (missing == 0) break;
      if (!live(n) || std::find(f.nodes.begin(), f.nodes.end(), n) != f.nodes.end()) continue;
      if (!place(f, n)) continue;  // placed now, stored once the copy lands
      out.push_back(Repair{i, good.front(), n});
      --missing;
    }
    if (missing > 0) {
      return TIDE_ERROR(Code::kUnavailable, "store: not enough live nodes to re-replicate");
    }
  }
  return out;
}

Result<uint64_t> SnapshotCatalog::latestReadable() const {
  for (auto it = snapshots_.rbegin(); it != snapshots_.rend(); ++it) {
    if (it->second.state == SnapshotState::kReady || it->second.state == SnapshotState::kDegraded) {
      return it->first;
    }
  }
  return TIDE_ERROR(Code::kNotFound, "store: no readable snapshot");
}

Status SnapshotCatalog::acquire(uint64_t version) {
  TIDE_ASSIGN_OR_RETURN(Snapshot * s, find(version));
  if (s->state != SnapshotState::kReady && s->state != SnapshotState::kDegraded) {
    return TIDE_ERROR(Code::kFailedPrecondition, "store: version " + std::to_string(version) +
                                                     " is " + snapshotStateName(s->state));
  }
  ++s->leases;
  return Status::ok();
}

Status SnapshotCatalog::release(uint64_t version) {
  TIDE_ASSIGN_OR_RETURN(Snapshot * s, find(version));
  if (s->leases == 0) {
    return TIDE_ERROR(Code::kFailedPrecondition,
                      "store: version " + std::to_string(version) + " holds no lease");
  }
  --s->leases;
  return Status::ok();
}

std::vector<uint64_t> SnapshotCatalog::collect() {
  std::vector<uint64_t> dropped;
  uint64_t newestReady = 0;
  bool any = false;
  for (const auto& [v, s] : snapshots_) {
    if (s.state == SnapshotState::kReady) {
      newestReady = v;
      any = true;
    }
  }
  if (!any) return dropped;
  for (auto it = snapshots_.begin(); it != snapshots_.end() && it->first < newestReady;) {
    if (it->second.leases > 0 || it->second.state == SnapshotState::kImporting) {
      ++it;
      continue;
    }
    for (const Fragment& f : it->second.fragments) unplace(f);
    dropped.push_back(it->first);
    it = snapshots_.erase(it);
  }
  return dropped;
}

Result<uint32_t> SnapshotCatalog::source(uint64_t version, uint32_t fragment) const {
  TIDE_ASSIGN_OR_RETURN(const Snapshot* s, snapshot(version));
  if (fragment >= s->fragments.size()) {
    return TIDE_ERROR(Code::kInvalidArgument, "store: no fragment " + std::to_string(fragment));
  }
  const Fragment& f = s->fragments[fragment];
  for (uint32_t n : f.nodes) {
    if (live(n) && f.stored.count(n)) return n;
  }
  return TIDE_ERROR(Code::kDataLoss, "store: version " + std::to_string(version) + " fragment " +
                                         std::to_string(fragment) + " has no live replica");
}

}  // namespace tide::sync::store
