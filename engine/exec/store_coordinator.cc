#include "engine/exec/store_coordinator.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "engine/sync/store/catalog_json.h"

namespace tide::exec {

using sync::store::SnapshotState;

StoreCoordinator::StoreCoordinator(const StoreLayout& layout, Store& store, double timeoutSeconds,
                                   std::string catalogJson)
    : layout_(layout),
      store_(store),
      timeout_(timeoutSeconds),
      catalogJson_(std::move(catalogJson)),
      catalog_(layout.nodes, layout.replicas, layout.segmentBytes) {}

void StoreCoordinator::note(const std::string& event) {
  events_.push_back(event);
}

Status StoreCoordinator::place(uint64_t version) {
  std::vector<uint64_t> bytes, hashes;
  groups_.clear();
  for (size_t w = 0; w < layout_.writerRank.size(); ++w) {
    TIDE_ASSIGN_OR_RETURN(std::string text,
                          store_.get(storeKey(version, "hashes/w" + std::to_string(w)), timeout_));
    TIDE_ASSIGN_OR_RETURN(WriterHashes h, decodeHashes(text));
    const uint32_t first = layout_.fragBase[w], count = layout_.fragBase[w + 1] - first;
    if (h.fragments.size() != count) {
      return TIDE_ERROR(Code::kDataLoss, "store: trainer " + std::to_string(w) + " reported " +
                                             std::to_string(h.fragments.size()) +
                                             " fragments, expected " + std::to_string(count));
    }
    for (uint32_t i = 0; i < count; ++i) {
      bytes.push_back(layout_.bytesOf(first + i));
      hashes.push_back(h.fragments[i]);
    }
    groups_.insert(h.groups.begin(), h.groups.end());
  }
  TIDE_ASSIGN_OR_RETURN(const sync::store::Snapshot* s,
                        catalog_.beginImport(version, bytes, hashes));
  Placement p;
  for (const auto& f : s->fragments) {
    auto& reps = p.replicas.emplace_back();
    for (size_t i = 0; i < f.nodes.size(); ++i) reps.emplace_back(f.nodes[i], f.offsets[i]);
  }
  note("v" + std::to_string(version) + " IMPORTING");
  return store_.set(storeKey(version, "place"), encodePlacement(p));
}

Status StoreCoordinator::commit(uint64_t version) {
  for (size_t w = 0; w < layout_.writerRank.size(); ++w) {
    TIDE_ASSIGN_OR_RETURN(std::string ok,
                          store_.get(storeKey(version, "stored/w" + std::to_string(w)), timeout_));
    if (ok != "ok") {
      return TIDE_ERROR(Code::kUnavailable, "store: trainer " + std::to_string(w) +
                                                " could not store version " +
                                                std::to_string(version) + ": " + ok);
    }
  }
  TIDE_ASSIGN_OR_RETURN(const sync::store::Snapshot* s, catalog_.snapshot(version));
  for (uint32_t f = 0; f < s->fragments.size(); ++f) {
    for (uint32_t n : s->fragments[f].nodes) TIDE_RETURN_IF_ERROR(catalog_.stored(version, f, n));
  }
  TIDE_RETURN_IF_ERROR(catalog_.commit(version));
  CommitRecord c;
  c.manifestHash = s->manifestHash;
  c.manifest = s->manifest;
  for (const auto& f : s->fragments) {
    auto& reps = c.placement.replicas.emplace_back();
    for (size_t i = 0; i < f.nodes.size(); ++i) reps.emplace_back(f.nodes[i], f.offsets[i]);
  }
  c.groups = std::move(groups_);
  groups_.clear();
  note("v" + std::to_string(version) + " " + snapshotStateName(s->state));
  // Readers hold a lease on the version they will load from now on.
  for (size_t i = 0; i < layout_.readerRanks.size(); ++i) {
    TIDE_RETURN_IF_ERROR(catalog_.acquire(version));
  }
  return store_.set(storeKey(version, "commit"), encodeCommit(c));
}

Result<std::vector<RepairCopy>> StoreCoordinator::afterRead(uint64_t version) {
  std::set<uint32_t> lost;
  for (int r : layout_.readerRanks) {
    TIDE_ASSIGN_OR_RETURN(std::string text,
                          store_.get(storeKey(version, "read/r" + std::to_string(r)), timeout_));
    std::istringstream in(text);
    std::string tag;
    size_t n = 0;
    if (!(in >> tag >> n) || tag != "lost") {
      return TIDE_ERROR(Code::kDataLoss, "store: bad read report from rank " + std::to_string(r));
    }
    failovers_ += n;
    for (size_t i = 0; i < n; ++i) {
      uint32_t node = 0;
      if (!(in >> node)) {
        return TIDE_ERROR(Code::kDataLoss, "store: bad read report from rank " + std::to_string(r));
      }
      lost.insert(node);
    }
  }
  // Every reader holds V now: their leases on V-1 go, and what nobody holds
  // is collected before anything is re-replicated.
  if (hasLease_) {
    for (size_t i = 0; i < layout_.readerRanks.size(); ++i) {
      TIDE_RETURN_IF_ERROR(catalog_.release(leased_));
    }
  }
  leased_ = version;
  hasLease_ = true;
  for (uint64_t v : catalog_.collect()) note("v" + std::to_string(v) + " collected");
  std::vector<RepairCopy> out;
  for (uint32_t node : lost) {
    if (!catalog_.live(node)) continue;
    TIDE_RETURN_IF_ERROR(catalog_.nodeLost(node));
    note("node " + std::to_string(node) + " lost (reported by readers of v" +
         std::to_string(version) + ")");
  }
  if (lost.empty()) return out;
  for (const auto& [v, s] : catalog_.snapshots()) {
    if (s.state == SnapshotState::kDegraded || s.state == SnapshotState::kLost) {
      note("v" + std::to_string(v) + " " + snapshotStateName(s.state));
    }
  }
  std::vector<uint64_t> versions;
  for (const auto& [v, s] : catalog_.snapshots()) {
    if (s.state == SnapshotState::kDegraded) versions.push_back(v);
  }
  for (uint64_t v : versions) {
    TIDE_ASSIGN_OR_RETURN(auto repairs, catalog_.repairs(v));
    TIDE_ASSIGN_OR_RETURN(const sync::store::Snapshot* s, catalog_.snapshot(v));
    for (const auto& r : repairs) {
      const auto& f = s->fragments[r.fragment];
      RepairCopy c;
      c.version = v;
      c.fragment = r.fragment;
      c.from = r.from;
      c.to = r.to;
      c.bytes = f.bytes;
      for (size_t i = 0; i < f.nodes.size(); ++i) {
        if (f.nodes[i] == r.from) c.fromOffset = f.offsets[i];
        if (f.nodes[i] == r.to) c.toOffset = f.offsets[i];
      }
      out.push_back(c);
    }
  }
  return out;
}

Status StoreCoordinator::finish(uint64_t version, const std::vector<RepairCopy>& done) {
  std::set<uint64_t> repaired;
  for (const RepairCopy& c : done) {
    TIDE_RETURN_IF_ERROR(catalog_.stored(c.version, c.fragment, c.to));
    repairedBytes_ += c.bytes;
    repaired.insert(c.version);
  }
  for (uint64_t v : repaired) {
    TIDE_ASSIGN_OR_RETURN(const sync::store::Snapshot* s, catalog_.snapshot(v));
    note("v" + std::to_string(v) + " " + snapshotStateName(s->state) + " (re-replicated)");
  }
  (void)version;
  return writeCatalog();
}

Status StoreCoordinator::writeCatalog() const {
  if (catalogJson_.empty()) return Status::ok();
  nlohmann::json j = sync::store::catalogToJson(catalog_);
  j["events"] = events_;
  j["segment_bytes"] = layout_.segmentBytes;
  j["fragment_bytes"] = layout_.fragmentBytes;
  j["failovers"] = failovers_;
  j["repaired_bytes"] = repairedBytes_;
  const std::string tmp = catalogJson_ + ".tmp";
  {
    std::ofstream f(tmp);
    f << j.dump(1) << '\n';
    if (!f) return TIDE_ERROR(Code::kInternal, "store: cannot write " + tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, catalogJson_, ec);
  if (ec) {
    return TIDE_ERROR(Code::kInternal,
                      "store: cannot rename " + tmp + " to " + catalogJson_ + ": " + ec.message());
  }
  return Status::ok();
}

}  // namespace tide::exec
