#include "engine/exec/weight_store/store_path.h"

#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "engine/core/parse.h"
#include "engine/exec/executor/incoming_groups.h"

namespace tide::exec {

using plan::Space;

namespace {

std::string segmentKey(uint32_t node) {
  return "store/segment/n" + std::to_string(node);
}

// XXH3 of the runs' bytes in order, on the source or destination side.
uint64_t runsHash(const uint8_t* base, const std::vector<Run>& runs, bool dstSide) {
  XXH3_state_t* st = XXH3_createState();
  XXH3_64bits_reset(st);
  for (const Run& r : runs)
    XXH3_64bits_update(st, base + (dstSide ? r.dstOffset : r.srcOffset), r.bytes);
  const uint64_t h = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  return h;
}

}  // namespace

StorePath::~StorePath() = default;

Result<std::unique_ptr<StorePath>> StorePath::create(const plan::TransferPlan& plan,
                                                     const std::vector<RankLayout>& layouts,
                                                     const RankSchedule& schedule,
                                                     transport::Transport& transport, Store& store,
                                                     const RegionIds& localIds,
                                                     StorePathOptions options) {
  std::unique_ptr<StorePath> p(new StorePath(transport, store, options));
  p->rank_ = static_cast<int>(schedule.rank);
  TIDE_ASSIGN_OR_RETURN(p->layout_,
                        StoreLayout::build(plan, layouts, options.nodes, options.replicas,
                                           options.fragmentBytes, options.segmentBytes));
  p->options_.segmentBytes = p->layout_.segmentBytes;
  const StoreLayout& l = p->layout_;
  p->writer_ = l.writerOf[p->rank_];
  if (p->writer_ >= 0) {
    if (!schedule.in.empty()) {
      return TIDE_ERROR(Code::kInvalidArgument, "store: needs a p2p plan (trainer rank " +
                                                    std::to_string(p->rank_) + " also receives)");
    }
    p->sliceSpace_ = l.sliceSpace[p->writer_];
    p->sliceRegion_ = localIds[static_cast<int>(p->sliceSpace_)];
    for (const auto& g : schedule.out) {
      if (g.srcSpace != p->sliceSpace_ || g.dstSpace != Space::kInfer || g.hop) {
        return TIDE_ERROR(Code::kInvalidArgument,
                          "store: needs a p2p plan (writes from one trainer space straight into "
                          "inference shards)");
      }
      p->outGroups_.push_back(&g);
    }
    p->localTasks_ = schedule.local;
  }
  // Reader: its runs, cut at fragment boundaries, read into a shadow shard.
  TIDE_ASSIGN_OR_RETURN(auto incoming, incomingGroups(plan, layouts, schedule));
  for (size_t u = 0; u < incoming.size(); ++u) {
    const OutGroup& g = incoming[u];
    const int w = l.writerOf[schedule.in[u].src];
    if (w < 0 || g.srcSpace != l.sliceSpace[w] || g.dstSpace != Space::kInfer || g.hop) {
      return TIDE_ERROR(Code::kInvalidArgument,
                        "store: needs a p2p plan (rank " + std::to_string(schedule.in[u].src) +
                            " sends but is no trainer, or not from its slice)");
    }
    for (const Run& r : g.runs) {
      uint64_t at = r.srcOffset, dst = r.dstOffset, left = r.bytes;
      while (left > 0) {
        const uint64_t k = at / l.fragmentBytes, off = at % l.fragmentBytes;
        const uint64_t n = std::min(left, l.fragmentBytes - off);
        p->pieces_.push_back(Piece{l.fragBase[w] + static_cast<uint32_t>(k), off, dst, n});
        at += n;
        dst += n;
        left -= n;
      }
    }
    p->units_.push_back(Unit{schedule.in[u].src, static_cast<uint32_t>(u), g.runs});
  }
  if (!p->units_.empty() && !options.readIntoShard) {
    p->shadowBytes_ = layouts[p->rank_].spaceBytes(Space::kInfer);
    TIDE_ASSIGN_OR_RETURN(p->shadow_,
                          transport::Registration::allocate(transport, p->shadowBytes_));
    p->localBase_[p->shadow_.id()] = p->shadow_.data();
  }
  TIDE_RETURN_IF_ERROR(p->setupSegments());
  if (p->rank_ == 0) {
    p->coordinator_ = std::make_unique<StoreCoordinator>(p->layout_, store, options.timeoutSeconds,
                                                         options.catalogJson);
    std::vector<int> joiners;
    for (int r : l.readerRanks) {
      if (p->isJoiner(r)) joiners.push_back(r);
    }
    if (options.joinStep >= 0 && joiners.size() != options.joinRanks.size()) {
      return TIDE_ERROR(Code::kInvalidArgument, "store: a joining rank is no inference rank");
    }
    if (options.joinStep >= 0 && joiners.size() == l.readerRanks.size()) {
      return TIDE_ERROR(Code::kInvalidArgument,
                        "store: a join needs inference ranks that do not join");
    }
    p->coordinator_->setJoin(options.joinStep, joiners);
  }
  return p;
}

Status StorePath::setupSegments() {
  const StoreLayout& l = layout_;
  if (static_cast<uint32_t>(rank_) < l.nodes) {
    TIDE_ASSIGN_OR_RETURN(segment_, transport::Registration::allocate(transport_, l.segmentBytes));
    TIDE_RETURN_IF_ERROR(store_.set(segmentKey(rank_), segment_.descriptor().serialize()));
  }
  // Writers, readers and the coordinator (repairs) address every node.
  segIds_.assign(l.nodes, 0);
  if (writer_ < 0 && units_.empty() && rank_ != 0) return Status::ok();
  for (uint32_t n = 0; n < l.nodes; ++n) {
    if (l.hostOf(n) == rank_) {
      segIds_[n] = segment_.id();
      continue;
    }
    TIDE_ASSIGN_OR_RETURN(std::string d, store_.get(segmentKey(n), options_.timeoutSeconds));
    TIDE_ASSIGN_OR_RETURN(auto remote, transport::RemoteRegion::deserialize(d));
    TIDE_RETURN_IF_ERROR(transport_.importRegion(remote));
    segIds_[n] = remote.id;
  }
  return Status::ok();
}

Result<uint32_t> StorePath::nodeOfRequest(const transport::Request& r) const {
  for (uint32_t n = 0; n < segIds_.size(); ++n) {
    if (layout_.hostOf(n) == r.peer && segIds_[n] == r.remoteRegion) return n;
  }
  return TIDE_ERROR(Code::kInternal, "store: request to no node");
}

// Runs the requests, one batch per node so a failure names its node. A
// node's requests to this rank's own segment are copied here (the segment
// must still be registered). With `failedNodes`, a node whose batch fails
// is added there and the others still run; without, the first error returns.
Status StorePath::runOnNodes(std::vector<transport::Request>& reqs,
                             std::set<uint32_t>* failedNodes) {
  std::map<uint32_t, std::vector<transport::Request>> byNode;
  for (const auto& r : reqs) {
    TIDE_ASSIGN_OR_RETURN(uint32_t n, nodeOfRequest(r));
    byNode[n].push_back(r);
  }
  auto fail = [&](uint32_t n, const Status& st) -> Status {
    if (st.isOk()) return st;
    if (!failedNodes) return st.withContext("store: node " + std::to_string(n));
    failedNodes->insert(n);
    return Status::ok();
  };
  std::vector<std::pair<uint32_t, transport::BatchId>> flights;
  for (auto& [n, rs] : byNode) {
    if (layout_.hostOf(n) == rank_) {
      TIDE_RETURN_IF_ERROR(fail(n, copyLocal(rs)));
      continue;
    }
    auto id = transport_.submit(rs);
    if (id.isOk()) {
      flights.emplace_back(n, *id);
    } else if (Status st = fail(n, id.status()); !st.isOk()) {
      for (auto& f : flights) (void)transport_.wait(f.second, options_.timeoutSeconds);
      return st;
    }
  }
  // Every batch is waited for, so none is left touching memory after an error.
  Status first;
  for (auto& [n, id] : flights) {
    Status st = fail(n, transport_.wait(id, options_.timeoutSeconds));
    if (first.isOk()) first = st;
  }
  return first;
}

// This rank's own segment is reached by a copy (not every backend writes to itself).
Status StorePath::copyLocal(const std::vector<transport::Request>& reqs) {
  if (!segment_.registered()) {
    return TIDE_ERROR(Code::kUnavailable,
                      "store: rank " + std::to_string(rank_) + " dropped its segment");
  }
  for (const auto& r : reqs) {
    auto it = localBase_.find(r.localRegion);
    if (it == localBase_.end() || r.remoteOffset + r.length > layout_.segmentBytes) {
      return TIDE_ERROR(Code::kInternal, "store: bad local copy");
    }
    uint8_t* local = it->second + r.localOffset;
    uint8_t* seg = segment_.data() + r.remoteOffset;
    if (r.op == transport::Op::kRead) {
      std::memcpy(local, seg, r.length);
    } else {
      std::memcpy(seg, local, r.length);
    }
  }
  return Status::ok();
}

Status StorePath::step(uint64_t version, const Buffers& buffers, StoreCounters& counters) {
  if (writer_ >= 0) {
    localBase_[sliceRegion_] = buffers[static_cast<int>(sliceSpace_)];
    TIDE_RETURN_IF_ERROR(publishHashes(version, buffers));
  }
  if (coordinator_) TIDE_RETURN_IF_ERROR(coordinator_->place(version));
  if (options_.loseDuringImport) TIDE_RETURN_IF_ERROR(dropSegmentIfAsked(version));
  if (writer_ >= 0 || coordinator_) TIDE_RETURN_IF_ERROR(importVersion(version, counters));
  if (coordinator_) TIDE_RETURN_IF_ERROR(coordinator_->commit(version));
  if (!options_.loseDuringImport) TIDE_RETURN_IF_ERROR(dropSegmentIfAsked(version));
  if (!units_.empty() && reads(rank_, version)) {
    TIDE_RETURN_IF_ERROR(readStep(version, buffers, counters));
  }
  if (!coordinator_) return Status::ok();
  TIDE_ASSIGN_OR_RETURN(auto copies, coordinator_->afterRead(version));
  if (!copies.empty()) {
    // Through a bounce buffer on this rank: READ from a live replica, WRITE to the new node.
    uint64_t total = 0;
    for (const auto& c : copies) total += c.bytes;
    TIDE_ASSIGN_OR_RETURN(auto bounce, transport::Registration::allocate(transport_, total));
    localBase_[bounce.id()] = bounce.data();
    std::vector<transport::Request> reads, writes;
    uint64_t at = 0;
    for (const auto& c : copies) {
      transport::Request q;
      q.localRegion = bounce.id();
      q.localOffset = at;
      q.length = c.bytes;
      q.op = transport::Op::kRead;
      q.peer = layout_.hostOf(c.from);
      q.remoteRegion = segIds_[c.from];
      q.remoteOffset = c.fromOffset;
      reads.push_back(q);
      q.op = transport::Op::kWrite;
      q.peer = layout_.hostOf(c.to);
      q.remoteRegion = segIds_[c.to];
      q.remoteOffset = c.toOffset;
      writes.push_back(q);
      at += c.bytes;
    }
    Status st = runOnNodes(reads, nullptr);
    if (st.isOk()) st = runOnNodes(writes, nullptr);
    localBase_.erase(bounce.id());
    bounce.reset();
    TIDE_RETURN_IF_ERROR(st.withContext("store: re-replication"));
  }
  TIDE_RETURN_IF_ERROR(coordinator_->finish(version, copies));
  if (static_cast<int64_t>(version) != options_.joinStep) return Status::ok();
  return coordinator_->grantJoin(options_.joinRanks.size());
}

Status StorePath::dropSegmentIfAsked(uint64_t version) {
  if (options_.loseNode < 0 || static_cast<int>(version) != options_.loseStep) {
    return Status::ok();
  }
  const auto node = static_cast<uint32_t>(options_.loseNode);
  if (node >= layout_.nodes) {
    return TIDE_ERROR(Code::kInvalidArgument,
                      "store: no node " + std::to_string(node) + " to lose");
  }
  if (layout_.hostOf(node) != rank_) return Status::ok();
  // The node dies mid-update: once placed, before the trainers write, or
  // after the commit, before anyone reads.
  const std::string after =
      options_.loseDuringImport ? placeKey(version, 0) : storeKey(version, "commit");
  TIDE_RETURN_IF_ERROR(store_.get(after, options_.timeoutSeconds).status());
  TIDE_RETURN_IF_ERROR(segment_.release());
  return store_.set(storeKey(version, "node-dropped"), "1");
}

Status StorePath::publishHashes(uint64_t version, const Buffers& buffers) {
  // The plan's local tasks of a trainer only convert its shard into its slice.
  for (const LocalTask& t : localTasks_) {
    const uint8_t* src = buffers[static_cast<int>(t.srcSpace)];
    uint8_t* dst = buffers[static_cast<int>(t.dstSpace)];
    for (const Run& r : t.runs) std::memcpy(dst + r.dstOffset, src + r.srcOffset, r.bytes);
  }
  const StoreLayout& l = layout_;
  const uint8_t* slice = buffers[static_cast<int>(sliceSpace_)];
  WriterHashes h;
  const uint32_t first = l.fragBase[writer_], last = l.fragBase[writer_ + 1];
  for (uint32_t f = first; f < last; ++f) {
    h.fragments.push_back(XXH3_64bits(slice + l.sliceOffset(f), l.bytesOf(f)));
  }
  for (const OutGroup* g : outGroups_) {
    h.groups[{g->peer, g->unit}] = runsHash(slice, g->runs, false);
  }
  return store_.set(storeKey(version, "hashes/w" + std::to_string(writer_)), encodeHashes(h));
}

// Writers write their fragments where the coordinator placed them and
// report; a node that failed is reported and the coordinator places the
// version again without it, until every replica is stored (or it tells why not).
Status StorePath::importVersion(uint64_t version, StoreCounters& counters) {
  if (writer_ >= 0 && options_.loseDuringImport && static_cast<int>(version) == options_.loseStep) {
    TIDE_RETURN_IF_ERROR(
        store_.get(storeKey(version, "node-dropped"), options_.timeoutSeconds).status());
  }
  const std::string w = "/w" + std::to_string(writer_);
  for (uint32_t attempt = 0;; ++attempt) {
    const std::string a = "/a" + std::to_string(attempt);
    if (writer_ >= 0) {
      std::set<uint32_t> failed;
      Status st = writeAttempt(version, attempt, counters, failed);
      if (!st.isOk()) {  // the coordinator stops waiting for this writer
        (void)store_.set(storeKey(version, "stored" + w + a), "error " + st.toString());
        return st;
      }
      std::string report = "ok";
      if (!failed.empty()) {
        report = "lost " + std::to_string(failed.size());
        for (uint32_t n : failed) report += " " + std::to_string(n);
      }
      TIDE_RETURN_IF_ERROR(store_.set(storeKey(version, "stored" + w + a), report));
    }
    if (coordinator_) {
      TIDE_ASSIGN_OR_RETURN(bool done, coordinator_->settle(version, attempt));
      if (done) return Status::ok();
      continue;
    }
    TIDE_ASSIGN_OR_RETURN(std::string outcome,
                          store_.get(storeKey(version, "outcome" + a), options_.timeoutSeconds));
    if (outcome == "commit") return Status::ok();
    if (outcome != "retry") {
      return TIDE_ERROR(Code::kUnavailable, "store: version " + std::to_string(version) +
                                                " was not stored: " + outcome);
    }
  }
}

Status StorePath::writeAttempt(uint64_t version, uint32_t attempt, StoreCounters& counters,
                               std::set<uint32_t>& failed) {
  const StoreLayout& l = layout_;
  const uint32_t first = l.fragBase[writer_], last = l.fragBase[writer_ + 1];
  TIDE_ASSIGN_OR_RETURN(std::string text,
                        store_.get(placeKey(version, attempt), options_.timeoutSeconds));
  TIDE_ASSIGN_OR_RETURN(Placement p, decodePlacement(text, l.fragments()));
  std::vector<transport::Request> reqs;
  for (uint32_t f = first; f < last; ++f) {
    for (const auto& [node, off] : p.replicas[f]) {
      if (node >= l.nodes) return TIDE_ERROR(Code::kDataLoss, "store: placement on no node");
      transport::Request q;
      q.op = transport::Op::kWrite;
      q.localRegion = sliceRegion_;
      q.localOffset = l.sliceOffset(f);
      q.peer = l.hostOf(node);
      q.remoteRegion = segIds_[node];
      q.remoteOffset = off;
      q.length = l.bytesOf(f);
      reqs.push_back(q);
      counters.bytesWritten += q.length;
    }
  }
  if (attempt == 0) counters.sliceBytes += l.sliceBytes[writer_];
  return runOnNodes(reqs, &failed);
}

bool StorePath::isJoiner(int rank) const {
  return options_.joinStep >= 0 && std::find(options_.joinRanks.begin(), options_.joinRanks.end(),
                                             rank) != options_.joinRanks.end();
}

bool StorePath::reads(int rank, uint64_t version) const {
  return !isJoiner(rank) || static_cast<int64_t>(version) > options_.joinStep;
}

Result<uint64_t> StorePath::join(const Buffers& buffers, StoreCounters& counters) {
  auto got = store_.get(joinKey(), options_.timeoutSeconds);
  if (!got.isOk()) return got.status().withContext("store: no lease granted to the joining engine");
  auto parsed = parseUnsigned(*got, "join record");
  if (!parsed.isOk()) return TIDE_ERROR(Code::kDataLoss, "store: " + parsed.status().message());
  const uint64_t version = *parsed;
  TIDE_ASSIGN_OR_RETURN(auto found, readVersion(version, buffers, counters));
  // Nodes it found gone are reported with its first update's reads.
  (void)found;
  return version;
}

Status StorePath::readStep(uint64_t version, const Buffers& buffers, StoreCounters& counters) {
  TIDE_ASSIGN_OR_RETURN(auto found, readVersion(version, buffers, counters));
  std::string report = "lost " + std::to_string(found.size());
  for (uint32_t n : found) report += " " + std::to_string(n);
  reported_.insert(found.begin(), found.end());
  return store_.set(storeKey(version, "read/r" + std::to_string(rank_)), report);
}

Result<std::vector<uint32_t>> StorePath::readVersion(uint64_t version, const Buffers& buffers,
                                                     StoreCounters& counters) {
  // Into the staging shadow, or straight into the shard the caller gave
  // (readIntoShard: the shard is itself a shadow that nobody reads).
  uint8_t* readBase = shadow_.data();
  uint32_t readRegion = shadow_.id();
  if (options_.readIntoShard) {
    if (!hasShardRegion_) return TIDE_ERROR(Code::kInternal, "store: no shard region to read into");
    readBase = buffers[static_cast<int>(Space::kInfer)];
    readRegion = shardRegion_;
    localBase_[readRegion] = readBase;
  }
  const StoreLayout& l = layout_;
  auto got = store_.get(storeKey(version, "commit"), options_.timeoutSeconds);
  if (!got.isOk()) {
    return got.status().withContext("store: version " + std::to_string(version) +
                                    " was not committed");
  }
  if (got->rfind("abort:", 0) == 0) {
    return TIDE_ERROR(Code::kUnavailable, "store: version " + std::to_string(version) +
                                              " was not stored (" + got->substr(7) + ")");
  }
  TIDE_ASSIGN_OR_RETURN(CommitRecord c, decodeCommit(*got, l.fragments()));
  if (XXH3_64bits(c.manifest.data(), c.manifest.size()) != c.manifestHash) {
    return TIDE_ERROR(Code::kDataLoss, "store: the manifest of version " + std::to_string(version) +
                                           " does not match its hash");
  }
  if (options_.loseNode >= 0 && static_cast<int>(version) == options_.loseStep) {
    TIDE_RETURN_IF_ERROR(
        store_.get(storeKey(version, "node-dropped"), options_.timeoutSeconds).status());
  }
  // Each piece from a replica on a node not known gone; a node
  // whose batch fails is skipped and its pieces go to their next replica.
  std::vector<size_t> todo(pieces_.size());
  for (size_t i = 0; i < todo.size(); ++i) todo[i] = i;
  const size_t downBefore = down_.size();
  while (!todo.empty()) {
    std::vector<transport::Request> reqs;
    std::vector<std::pair<uint32_t, size_t>> owner;  // (node, piece) per request
    for (size_t i : todo) {
      const Piece& pc = pieces_[i];
      const auto& reps = c.placement.replicas[pc.fragment];
      // Readers start at different replicas so every node serves reads.
      const size_t start = (static_cast<size_t>(rank_) + pc.fragment) % reps.size();
      auto it = reps.end();
      for (size_t k = 0; k < reps.size() && it == reps.end(); ++k) {
        auto cand = reps.begin() + static_cast<std::ptrdiff_t>((start + k) % reps.size());
        if (!down_.count(cand->first)) it = cand;
      }
      if (it == reps.end()) {
        return TIDE_ERROR(Code::kDataLoss, "store: rank " + std::to_string(rank_) + ": version " +
                                               std::to_string(version) + " fragment " +
                                               std::to_string(pc.fragment) +
                                               " has no replica on a live node");
      }
      transport::Request q;
      q.op = transport::Op::kRead;
      q.localRegion = readRegion;
      q.localOffset = pc.dstOffset;
      q.peer = l.hostOf(it->first);
      q.remoteRegion = segIds_[it->first];
      q.remoteOffset = it->second + pc.fragOffset;
      q.length = pc.bytes;
      reqs.push_back(q);
      owner.emplace_back(it->first, i);
    }
    std::set<uint32_t> failed;
    TIDE_RETURN_IF_ERROR(runOnNodes(reqs, &failed));
    std::vector<size_t> again;
    for (size_t k = 0; k < reqs.size(); ++k) {
      if (failed.count(owner[k].first)) {
        again.push_back(owner[k].second);
      } else {
        counters.bytesRead += reqs[k].length;
      }
    }
    down_.insert(failed.begin(), failed.end());
    todo = std::move(again);
  }
  counters.failovers += static_cast<uint32_t>(down_.size() - downBefore);
  std::vector<uint32_t> found;  // nodes this version's reads found gone
  for (uint32_t n : down_) {
    if (!reported_.count(n)) found.push_back(n);
  }
  // Every group as its trainer hashed it, before any shard byte changes.
  for (const Unit& u : units_) {
    auto it = c.groups.find({rank_, u.unit});
    if (it == c.groups.end()) {
      return TIDE_ERROR(Code::kDataLoss, "store: version " + std::to_string(version) +
                                             " has no hash for unit " + std::to_string(u.unit) +
                                             " of rank " + std::to_string(rank_));
    }
    if (runsHash(readBase, u.runs, true) != it->second) {
      return TIDE_ERROR(Code::kDataLoss, "store: rank " + std::to_string(rank_) +
                                             " read a torn or corrupted "
                                             "fragment (version " +
                                             std::to_string(version) + ", unit " +
                                             std::to_string(u.unit) + " from trainer rank " +
                                             std::to_string(u.src) +
                                             "); the shard stays on its previous version");
    }
  }
  uint8_t* dst = buffers[static_cast<int>(Space::kInfer)];
  if (readBase != dst) {
    for (const Piece& pc : pieces_) {
      std::memcpy(dst + pc.dstOffset, readBase + pc.dstOffset, pc.bytes);
    }
  }
  return found;
}

}  // namespace tide::exec
