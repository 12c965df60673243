#include "engine/exec/store_path.h"

#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "engine/exec/incoming_groups.h"

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

StorePath::~StorePath() {
  if (segmentRegistered_) (void)transport_.deregisterRegion(segmentId_);
  if (shadowRegistered_) (void)transport_.deregisterRegion(shadowId_);
}

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
  if (!p->units_.empty()) {
    p->shadowBytes_ = layouts[p->rank_].spaceBytes(Space::kInfer);
    p->shadow_ = std::make_unique<uint8_t[]>(p->shadowBytes_);
    TIDE_ASSIGN_OR_RETURN(auto region, transport.registerRegion(p->shadow_.get(), p->shadowBytes_));
    p->shadowId_ = region.id;
    p->shadowRegistered_ = true;
    p->localBase_[region.id] = p->shadow_.get();
  }
  TIDE_RETURN_IF_ERROR(p->setupSegments());
  if (p->rank_ == 0) {
    p->coordinator_ = std::make_unique<StoreCoordinator>(p->layout_, store, options.timeoutSeconds,
                                                         options.catalogJson);
  }
  return p;
}

Status StorePath::setupSegments() {
  const StoreLayout& l = layout_;
  if (static_cast<uint32_t>(rank_) < l.nodes) {
    segment_ = std::make_unique<uint8_t[]>(l.segmentBytes);
    TIDE_ASSIGN_OR_RETURN(auto region, transport_.registerRegion(segment_.get(), l.segmentBytes));
    segmentId_ = region.id;
    segmentRegistered_ = true;
    TIDE_RETURN_IF_ERROR(store_.set(segmentKey(rank_), region.descriptor.serialize()));
  }
  // Writers, readers and the coordinator (repairs) address every node.
  segIds_.assign(l.nodes, 0);
  if (writer_ < 0 && units_.empty() && rank_ != 0) return Status::ok();
  for (uint32_t n = 0; n < l.nodes; ++n) {
    if (l.hostOf(n) == rank_) {
      segIds_[n] = segmentId_;
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
  if (!segmentRegistered_) {
    return TIDE_ERROR(Code::kUnavailable,
                      "store: rank " + std::to_string(rank_) + " dropped its segment");
  }
  for (const auto& r : reqs) {
    auto it = localBase_.find(r.localRegion);
    if (it == localBase_.end() || r.remoteOffset + r.length > layout_.segmentBytes) {
      return TIDE_ERROR(Code::kInternal, "store: bad local copy");
    }
    uint8_t* local = it->second + r.localOffset;
    uint8_t* seg = segment_.get() + r.remoteOffset;
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
  if (writer_ >= 0) TIDE_RETURN_IF_ERROR(writeFragments(version, counters));
  if (coordinator_) TIDE_RETURN_IF_ERROR(coordinator_->commit(version));
  TIDE_RETURN_IF_ERROR(dropSegmentIfAsked(version));
  if (!units_.empty()) TIDE_RETURN_IF_ERROR(readStep(version, buffers, counters));
  if (!coordinator_) return Status::ok();
  TIDE_ASSIGN_OR_RETURN(auto copies, coordinator_->afterRead(version));
  if (!copies.empty()) {
    // Through a bounce buffer on this rank: READ from a live replica, WRITE to the new node.
    uint64_t total = 0;
    for (const auto& c : copies) total += c.bytes;
    auto bounce = std::make_unique<uint8_t[]>(total);
    TIDE_ASSIGN_OR_RETURN(auto region, transport_.registerRegion(bounce.get(), total));
    localBase_[region.id] = bounce.get();
    std::vector<transport::Request> reads, writes;
    uint64_t at = 0;
    for (const auto& c : copies) {
      transport::Request q;
      q.localRegion = region.id;
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
    (void)transport_.deregisterRegion(region.id);
    localBase_.erase(region.id);
    TIDE_RETURN_IF_ERROR(st.withContext("store: re-replication"));
  }
  return coordinator_->finish(version, copies);
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
  // After the commit, before anyone reads: the node dies mid-update.
  TIDE_RETURN_IF_ERROR(store_.get(storeKey(version, "commit"), options_.timeoutSeconds).status());
  if (segmentRegistered_) {
    TIDE_RETURN_IF_ERROR(transport_.deregisterRegion(segmentId_));
    segmentRegistered_ = false;
  }
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

Status StorePath::writeFragments(uint64_t version, StoreCounters& counters) {
  const StoreLayout& l = layout_;
  const uint32_t first = l.fragBase[writer_], last = l.fragBase[writer_ + 1];
  TIDE_ASSIGN_OR_RETURN(std::string text,
                        store_.get(storeKey(version, "place"), options_.timeoutSeconds));
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
  counters.sliceBytes += l.sliceBytes[writer_];
  Status st = runOnNodes(reqs, nullptr);
  TIDE_RETURN_IF_ERROR(store_.set(storeKey(version, "stored/w" + std::to_string(writer_)),
                                  st.isOk() ? "ok" : st.toString()));
  return st;
}

Status StorePath::readStep(uint64_t version, const Buffers& buffers, StoreCounters& counters) {
  const StoreLayout& l = layout_;
  auto got = store_.get(storeKey(version, "commit"), options_.timeoutSeconds);
  if (!got.isOk()) {
    return got.status().withContext("store: version " + std::to_string(version) +
                                    " was not committed");
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
      q.localRegion = shadowId_;
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
    if (runsHash(shadow_.get(), u.runs, true) != it->second) {
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
  for (const Piece& pc : pieces_) {
    std::memcpy(dst + pc.dstOffset, shadow_.get() + pc.dstOffset, pc.bytes);
  }
  std::string report = "lost " + std::to_string(found.size());
  for (uint32_t n : found) report += " " + std::to_string(n);
  reported_.insert(found.begin(), found.end());
  return store_.set(storeKey(version, "read/r" + std::to_string(rank_)), report);
}

}  // namespace tide::exec
