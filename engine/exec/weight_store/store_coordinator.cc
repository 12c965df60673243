#include "engine/exec/weight_store/store_coordinator.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

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

void StoreCoordinator::setJoin(int step, std::vector<int> ranks) {
  joinStep_ = step;
  joinRanks_ = std::move(ranks);
}

bool StoreCoordinator::reads(int rank, uint64_t version) const {
  return static_cast<int64_t>(version) > joinStep_ ||
         std::find(joinRanks_.begin(), joinRanks_.end(), rank) == joinRanks_.end();
}

Status StoreCoordinator::grantJoin(size_t ranks) {
  TIDE_ASSIGN_OR_RETURN(uint64_t v, catalog_.latestReadable());
  for (size_t i = 0; i < ranks; ++i) TIDE_RETURN_IF_ERROR(catalog_.acquire(v));
  held_[v] += static_cast<uint32_t>(ranks);
  std::string who;
  for (int r : joinRanks_) who += " " + std::to_string(r);
  note("v" + std::to_string(v) + " leased to a joining engine (ranks" + who + ")");
  TIDE_RETURN_IF_ERROR(writeCatalog());
  return store_.set(joinKey(), std::to_string(v));
}

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
  importBytes_ = std::move(bytes);
  importHashes_ = std::move(hashes);
  note("v" + std::to_string(version) + " IMPORTING");
  return placeAttempt(version, 0);
}

Status StoreCoordinator::placeAttempt(uint64_t version, uint32_t attempt) {
  TIDE_ASSIGN_OR_RETURN(const sync::store::Snapshot* s,
                        catalog_.beginImport(version, importBytes_, importHashes_));
  Placement p;
  for (const auto& f : s->fragments) {
    auto& reps = p.replicas.emplace_back();
    for (size_t i = 0; i < f.nodes.size(); ++i) reps.emplace_back(f.nodes[i], f.offsets[i]);
  }
  return store_.set(placeKey(version, attempt), encodePlacement(p));
}

// Gathers the writers' reports of one attempt; "lost" nodes are marked
// lost and the version is placed again without them. Returns whether the
// attempt stored every replica.
Result<bool> StoreCoordinator::gatherStored(uint64_t version, uint32_t attempt) {
  const std::string a = "/a" + std::to_string(attempt);
  std::set<uint32_t> lost;
  for (size_t w = 0; w < layout_.writerRank.size(); ++w) {
    TIDE_ASSIGN_OR_RETURN(
        std::string text,
        store_.get(storeKey(version, "stored/w" + std::to_string(w) + a), timeout_));
    auto report = decodeStoredReport(text, layout_.nodes);
    if (!report.isOk()) {
      return TIDE_ERROR(Code::kDataLoss,
                        "store: bad stored report from trainer " + std::to_string(w) + ": " + text);
    }
    if (report->ok) continue;
    if (!report->error.empty()) {
      return TIDE_ERROR(Code::kUnavailable,
                        "trainer " + std::to_string(w) + " failed: " + report->error);
    }
    lost.insert(report->lost.begin(), report->lost.end());
  }
  if (lost.empty()) return true;
  // The import is dropped whole (its space freed) and placed again on the
  // nodes still live: every writer rewrites its fragments.
  TIDE_RETURN_IF_ERROR(catalog_.abortImport(version));
  for (uint32_t n : lost) {
    if (!catalog_.live(n)) continue;
    TIDE_RETURN_IF_ERROR(catalog_.nodeLost(n));
    note("node " + std::to_string(n) + " lost (while importing v" + std::to_string(version) + ")");
  }
  for (const auto& [v, snap] : catalog_.snapshots()) {
    if (snap.state != SnapshotState::kReady)
      note("v" + std::to_string(v) + " " + snapshotStateName(snap.state));
  }
  note("v" + std::to_string(version) + " IMPORTING (placed again, attempt " +
       std::to_string(attempt + 1) + ")");
  return false;
}

Result<bool> StoreCoordinator::settle(uint64_t version, uint32_t attempt) {
  const std::string outcome = storeKey(version, "outcome/a" + std::to_string(attempt));
  auto stored = gatherStored(version, attempt);
  Status st = stored.status();
  if (stored.isOk() && !*stored) st = placeAttempt(version, attempt + 1);
  if (!st.isOk()) {
    // Nothing of this version stays: writers and readers get the reason.
    if (catalog_.snapshot(version).isOk()) (void)catalog_.abortImport(version);
    note("v" + std::to_string(version) + " aborted: " + st.message());
    (void)writeCatalog();
    (void)store_.set(outcome, st.message());
    (void)store_.set(storeKey(version, "commit"), "abort: " + st.message());
    return st.withContext("store: version " + std::to_string(version) + " was not stored");
  }
  TIDE_RETURN_IF_ERROR(store_.set(outcome, *stored ? "commit" : "retry"));
  return *stored;
}

Status StoreCoordinator::commit(uint64_t version) {
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
  for (int r : layout_.readerRanks) {
    if (!reads(r, version)) continue;
    TIDE_RETURN_IF_ERROR(catalog_.acquire(version));
    ++held_[version];
  }
  return store_.set(storeKey(version, "commit"), encodeCommit(c));
}

Result<std::vector<RepairCopy>> StoreCoordinator::afterRead(uint64_t version) {
  std::set<uint32_t> lost;
  for (int r : layout_.readerRanks) {
    if (!reads(r, version)) continue;
    TIDE_ASSIGN_OR_RETURN(std::string text,
                          store_.get(storeKey(version, "read/r" + std::to_string(r)), timeout_));
    auto found = decodeReadReport(text);
    if (!found.isOk())
      return TIDE_ERROR(Code::kDataLoss, "store: bad read report from rank " + std::to_string(r));
    failovers_ += found->size();
    lost.insert(found->begin(), found->end());
  }
  // Every reader holds V now: their leases on older versions go (a joining
  // engine's too), and what nobody holds is collected before anything is
  // re-replicated.
  for (auto it = held_.begin(); it != held_.end() && it->first < version;) {
    for (uint32_t i = 0; i < it->second; ++i) TIDE_RETURN_IF_ERROR(catalog_.release(it->first));
    it = held_.erase(it);
  }
  for (uint64_t v : catalog_.collect()) note("v" + std::to_string(v) + " collected");
  std::vector<RepairCopy> out;
  for (uint32_t node : lost) {
    if (!catalog_.live(node)) continue;
    TIDE_RETURN_IF_ERROR(catalog_.nodeLost(node));
    note("node " + std::to_string(node) + " lost (reported by readers of v" +
         std::to_string(version) + ")");
  }
  // Also after a node lost while importing: older versions held replicas there.
  for (const auto& [v, s] : catalog_.snapshots()) {
    if (!lost.empty() && (s.state == SnapshotState::kDegraded || s.state == SnapshotState::kLost)) {
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
