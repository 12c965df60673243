#include "engine/exec/rank_executor.h"

#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <span>
#include <string>
#include <unordered_map>

#include "engine/exec/fp8_blocks.h"

namespace tide::exec {

using plan::Space;

namespace {

std::string regionKey(int rank, int space) {
  return "region/r" + std::to_string(rank) + "/s" + std::to_string(space);
}

// The second copy of a rank's inference shard (the version switch).
std::string shadowKey(int rank) {
  return "region/r" + std::to_string(rank) + "/shadow";
}

uint64_t sbKey(uint32_t stage, uint32_t bucket) {
  return (static_cast<uint64_t>(stage) << 32) | bucket;
}

traces::EventPath pathOfBackend(const std::string& b) {
  if (b == "tcp") return traces::EventPath::kTcp;
  if (b == "shm") return traces::EventPath::kShm;
  if (b == "rdma") return traces::EventPath::kRdma;
  if (b == "nccl") return traces::EventPath::kNccl;
  return traces::EventPath::kUnknown;
}

}  // namespace

double RankExecutor::now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

RankExecutor::RankExecutor(const plan::TransferPlan& plan, const std::vector<RankLayout>& layouts,
                           const workloads::SyntheticWeights& weights,
                           transport::Transport& transport, Store& store, ExecOptions options)
    : plan_(plan),
      layouts_(layouts),
      weights_(weights),
      transport_(transport),
      store_(store),
      options_(options),
      rank_(transport.rank()) {}

RankExecutor::~RankExecutor() {
  for (int s = 0; s < kSpaceCount; ++s) {
    if (registered_[s]) (void)transport_.deregisterRegion(localIds_[s]);
  }
  if (shadowRegistered_) (void)transport_.deregisterRegion(shadowLocalId_);
}

Result<std::unique_ptr<RankExecutor>> RankExecutor::create(
    const plan::TransferPlan& plan, const std::vector<RankLayout>& layouts,
    const workloads::SyntheticWeights& weights, transport::Transport& transport, Store& store,
    ExecOptions options) {
  if (static_cast<size_t>(transport.worldSize()) != plan.ranks.size()) {
    return TIDE_ERROR(Code::kInvalidArgument, "exec: the plan has " +
                                                  std::to_string(plan.ranks.size()) +
                                                  " ranks but the transport world has " +
                                                  std::to_string(transport.worldSize()));
  }
  std::unique_ptr<RankExecutor> e(
      new RankExecutor(plan, layouts, weights, transport, store, options));
  TIDE_RETURN_IF_ERROR(e->setup());
  return e;
}

Status RankExecutor::setup() {
  TIDE_ASSIGN_OR_RETURN(
      schedule_,
      RankSchedule::build(plan_, layouts_, static_cast<uint32_t>(rank_), options_.chunkBytes));
  path_ = pathOfBackend(transport_.capabilities().backend);
  const RankLayout& me = layouts_[rank_];
  for (int s = 0; s < kSpaceCount; ++s) {
    const uint64_t bytes = me.spaceBytes(static_cast<Space>(s));
    if (bytes == 0) continue;
    buffers_[s] = std::make_unique<uint8_t[]>(bytes);
    TIDE_ASSIGN_OR_RETURN(auto region, transport_.registerRegion(buffers_[s].get(), bytes));
    localIds_[s] = region.id;
    registered_[s] = true;
    TIDE_RETURN_IF_ERROR(store_.set(regionKey(rank_, s), region.descriptor.serialize()));
  }
  const uint64_t inferBytes = me.spaceBytes(Space::kInfer);
  if (options_.shadowSwitch) {
    if (options_.mode != UpdateMode::kFull && options_.mode != UpdateMode::kStore) {
      return TIDE_ERROR(Code::kInvalidArgument,
                        "switch: a shadow copy takes full updates (p2p, broadcast) or store "
                        "ones, not deltas (they apply to the version before)");
    }
    for (const auto& g : schedule_.out) {
      if (g.srcSpace == Space::kInfer) {
        return TIDE_ERROR(Code::kInvalidArgument,
                          "switch: needs a p2p plan (this one forwards from inference shards)");
      }
    }
  }
  if (options_.shadowSwitch && inferBytes > 0) {
    inferShadow_ = std::make_unique<uint8_t[]>(inferBytes);
    TIDE_ASSIGN_OR_RETURN(auto region, transport_.registerRegion(inferShadow_.get(), inferBytes));
    shadowLocalId_ = region.id;
    shadowRegistered_ = true;
    TIDE_RETURN_IF_ERROR(store_.set(shadowKey(rank_), region.descriptor.serialize()));
  }
  if (rank_ == 0) TIDE_RETURN_IF_ERROR(store_.set("epoch", std::to_string(now())));
  TIDE_ASSIGN_OR_RETURN(std::string epoch, store_.get("epoch", options_.timeoutSeconds));
  epoch_ = std::stod(epoch);

  remoteIds_.assign(plan_.ranks.size(), {});
  std::vector<std::array<bool, kSpaceCount>> imported(plan_.ranks.size());
  for (const auto& g : schedule_.out) {
    const int s = static_cast<int>(g.dstSpace);
    if (imported[g.peer][s]) continue;
    TIDE_ASSIGN_OR_RETURN(std::string bytes,
                          store_.get(regionKey(g.peer, s), options_.timeoutSeconds));
    TIDE_ASSIGN_OR_RETURN(auto remote, transport::RemoteRegion::deserialize(bytes));
    TIDE_RETURN_IF_ERROR(transport_.importRegion(remote));
    remoteIds_[g.peer][s] = remote.id;
    imported[g.peer][s] = true;
    if (options_.shadowSwitch && g.dstSpace == Space::kInfer) {
      if (remoteShadowIds_.empty()) remoteShadowIds_.assign(plan_.ranks.size(), 0);
      TIDE_ASSIGN_OR_RETURN(std::string sb, store_.get(shadowKey(g.peer), options_.timeoutSeconds));
      TIDE_ASSIGN_OR_RETURN(auto shadow, transport::RemoteRegion::deserialize(sb));
      TIDE_RETURN_IF_ERROR(transport_.importRegion(shadow));
      remoteShadowIds_[g.peer] = shadow.id;
    }
  }
  if (options_.mode != UpdateMode::kFull) {
    for (int s = 0; s < kSpaceCount; ++s) {
      for (const auto& p : me.placed(static_cast<Space>(s))) {
        if (p.dtype == workloads::DType::kFP8E4M3) {
          return TIDE_ERROR(Code::kUnimplemented,
                            "exec: FP8 inference weights take full updates (p2p, broadcast); "
                            "sparse, disk-delta and store updates are bf16 only");
        }
      }
    }
  }
  if (options_.mode == UpdateMode::kSparse) {
    if (options_.poisonTargets) {
      return TIDE_ERROR(Code::kInvalidArgument,
                        "sparse: deltas apply to version 0, not to a poison pattern");
    }
    TIDE_ASSIGN_OR_RETURN(sparse_, SparsePath::create(plan_, layouts_, schedule_, weights_,
                                                      transport_, store_, options_.timeoutSeconds));
  } else if (options_.mode == UpdateMode::kDiskDelta) {
    TIDE_ASSIGN_OR_RETURN(
        disk_, DiskDeltaPath::create(plan_, layouts_, schedule_, store_,
                                     DiskDeltaPathOptions{options_.deltaDir, options_.baseEvery,
                                                          options_.timeoutSeconds}));
    // Version 0 goes to the directory as a base, and every inference rank
    // rebuilds its mirrors from it.
    if (plan_.ranks[rank_].role == plan::Role::kTrainer) TIDE_RETURN_IF_ERROR(materializeTrain(0));
    DiskDeltaCounters ignored;
    TIDE_RETURN_IF_ERROR(disk_->step(0, bufferArray(), ignored));
  } else if (options_.mode == UpdateMode::kStore) {
    StorePathOptions so = options_.store;
    so.timeoutSeconds = options_.timeoutSeconds;
    so.readIntoShard = options_.shadowSwitch;  // the switch's shadow is the staging copy
    std::array<uint32_t, kSpaceCount> ids{};
    for (int s = 0; s < kSpaceCount; ++s) ids[s] = localIds_[s];
    TIDE_ASSIGN_OR_RETURN(
        storePath_, StorePath::create(plan_, layouts_, schedule_, transport_, store_, ids, so));
    // Version 0 is imported into the store and every inference rank loads
    // it from there into a poisoned shard, checked bit-exact (a skipped load
    // cannot pass). A joining rank stays empty until it joins.
    serving_ = storePath_->reads(rank_, 0);
    if (inferBytes > 0) std::memset(buffer(Space::kInfer), 0xA5, inferBytes);
    if (plan_.ranks[rank_].role == plan::Role::kTrainer) TIDE_RETURN_IF_ERROR(materializeTrain(0));
    StoreCounters ignored;
    storePath_->readInto(localIds_[kInferSpace]);  // nothing serves it yet
    TIDE_RETURN_IF_ERROR(storePath_->step(0, bufferArray(), ignored));
    if (serving_) TIDE_RETURN_IF_ERROR(verify(0));
  }
  // Every other mode starts from version 0 in place (sparse deltas apply to it).
  if (options_.mode != UpdateMode::kStore) TIDE_RETURN_IF_ERROR(materializeInfer(0));
  TIDE_RETURN_IF_ERROR(setupSwitch());
  return storeBarrier(store_, "setup", static_cast<int>(plan_.ranks.size()),
                      options_.timeoutSeconds);
}

Status RankExecutor::setupSwitch() {
  if (!inferShadow_) return Status::ok();
  // A poison pattern is no version generation could serve.
  const bool v0 = serving_ && (options_.mode == UpdateMode::kStore || !options_.poisonTargets);
  switch_ = std::make_unique<VersionSwitch>(buffers_[kInferSpace].get(), inferShadow_.get(),
                                            layouts_[rank_].spaceBytes(Space::kInfer), v0 ? 0 : -1);
  switch_->startGeneration(options_.generationIntervalSeconds);
  return Status::ok();
}

ServedVersion RankExecutor::serving() const {
  if (switch_) return switch_->serving();
  const uint64_t n = layouts_[rank_].spaceBytes(Space::kInfer);
  return ServedVersion{serving_ ? version_ : -1,
                       n ? XXH3_64bits(buffers_[kInferSpace].get(), n) : 0};
}

// After a switch the live copy is the one the update wrote.
void RankExecutor::switchCopies() {
  std::swap(buffers_[kInferSpace], inferShadow_);
  std::swap(localIds_[kInferSpace], shadowLocalId_);
}

std::array<uint8_t*, kSpaceCount> RankExecutor::bufferArray() {
  std::array<uint8_t*, kSpaceCount> b{};
  for (int s = 0; s < kSpaceCount; ++s) b[s] = buffer(static_cast<Space>(s));
  return b;
}

Status RankExecutor::materializeTrain(int version) {
  uint8_t* base = buffer(Space::kTrain);
  for (const auto& p : layouts_[rank_].placed(Space::kTrain)) {
    if (p.dtype != workloads::DType::kBF16) {
      return TIDE_ERROR(Code::kUnimplemented, "exec: training shards must be bf16");
    }
    auto* out = reinterpret_cast<uint16_t*>(base + p.offset);
    TIDE_RETURN_IF_ERROR(
        weights_.fillBox(p.tensor, p.box.toBox(), version, std::span(out, p.box.volume())));
  }
  return Status::ok();
}

Status RankExecutor::materializeInfer(int version) {
  uint8_t* base = buffer(Space::kInfer);
  for (const auto& p : layouts_[rank_].placed(Space::kInfer)) {
    if (options_.poisonTargets) {
      std::memset(base + p.offset, 0xA5, p.bytes);
      continue;
    }
    TIDE_RETURN_IF_ERROR(fillExpected(weights_, p, version, base + p.offset));
  }
  return Status::ok();
}

Status RankExecutor::verify(int version, const uint8_t* base) const {
  for (const auto& p : layouts_[rank_].placed(Space::kInfer)) {
    const uint64_t got = XXH3_64bits(base + p.offset, p.bytes);
    TIDE_ASSIGN_OR_RETURN(uint64_t want, expectedChecksum(weights_, p, version));
    if (got != want) {
      return TIDE_ERROR(Code::kDataLoss,
                        "verify: rank " + std::to_string(rank_) + " " +
                            weights_.inventory().tensors[p.tensor].name + " " + p.box.toString() +
                            " is not version " + std::to_string(version) + " (xxh3 " +
                            std::to_string(got) + ", expected " + std::to_string(want) + ")");
    }
  }
  return Status::ok();
}

Status RankExecutor::transferDisk(int step, traces::EventSink* events, RankStep& out) {
  DiskDeltaCounters c;
  const double t0 = now();
  TIDE_RETURN_IF_ERROR(disk_->step(static_cast<uint64_t>(step), bufferArray(), c));
  out.bytesSent = c.fileBytes;
  out.bytesFull = c.sliceBytes;
  out.bytesRead = c.bytesRead;
  out.elements = c.elements;
  out.changed = c.changed;
  return rankEvent(events, step, t0, c.fileBytes + c.bytesRead, traces::EventPath::kDisk);
}

// One event per rank and step for paths whose traffic is not one (src, dst)
// pair (files, the store); none when the rank moved nothing.
Status RankExecutor::rankEvent(traces::EventSink* events, int step, double t0, uint64_t bytes,
                               traces::EventPath path) const {
  if (!events || bytes == 0) return Status::ok();
  traces::Event e;
  e.tStart = t0 - epoch_;
  e.tEnd = now() - epoch_;
  e.src = e.dst = rank_;
  e.bytes = bytes;
  e.step = step;
  e.path = path;
  return events->append(e);
}

Status RankExecutor::transferStore(int step, traces::EventSink* events, RankStep& out) {
  if (storePath_->joinsAt(static_cast<uint64_t>(step))) TIDE_RETURN_IF_ERROR(join(step, out));
  StoreCounters c;
  const double t0 = now();
  storePath_->readInto(switch_ ? shadowLocalId_ : localIds_[kInferSpace]);
  TIDE_RETURN_IF_ERROR(storePath_->step(static_cast<uint64_t>(step), bufferArray(), c));
  out.bytesSent = c.bytesWritten;
  out.bytesFull = c.bytesWritten;
  out.bytesRead = c.bytesRead;
  return rankEvent(events, step, t0, c.bytesWritten + c.bytesRead, path_);
}

// A joining rank's first update: the version the coordinator leased it is
// pulled while the others go on with this update, and checked bit-exact
// before the rank serves it (with a switch: into the shadow, then switched).
Status RankExecutor::join(int step, RankStep& out) {
  (void)out;
  const double t0 = now();
  if (switch_) switch_->beginUpdate();
  StoreCounters c;
  storePath_->readInto(switch_ ? shadowLocalId_ : localIds_[kInferSpace]);
  TIDE_ASSIGN_OR_RETURN(uint64_t v, storePath_->join(bufferArray(), c));
  const double pulled = now() - t0;
  TIDE_RETURN_IF_ERROR(verify(static_cast<int>(v), buffer(Space::kInfer))
                           .withContext("join: rank " + std::to_string(rank_)));
  if (switch_) {
    (void)switch_->switchTo(static_cast<int>(v));
    switchCopies();
    switch_->beginUpdate();  // this step's update goes to the other copy
  }
  serving_ = true;
  return publishJoin(store_, step, rank_, now() - t0, pulled, c.bytesRead, v);
}

Status RankExecutor::transfer(int step, traces::EventSink* events, RankStep& out) {
  if (disk_) return transferDisk(step, events, out);
  if (storePath_) return transferStore(step, events, out);
  const RankSchedule& s = schedule_;
  const auto buffers = bufferArray();
  std::vector<uint64_t> wire(s.out.size(), 0);  // bytes each group put on the wire
  if (sparse_) (void)sparse_->takeCounters();   // a failed step's counts do not carry over
  // Outstanding work this rank receives or does locally, per (stage, bucket) and per stage.
  std::unordered_map<uint64_t, int64_t> pending;
  std::vector<int64_t> stagePending(plan_.stages.size(), 0);
  std::unordered_map<uint64_t, std::vector<char>> hopArrived;  // (stage, bucket) -> per chunk
  for (const auto& u : s.in) {
    ++pending[sbKey(u.stage, u.bucket)];
    ++stagePending[u.stage];
    if (u.hop) {
      auto& v = hopArrived[sbKey(u.stage, u.bucket)];
      if (v.size() <= u.chunk) v.resize(u.chunk + 1, 0);
    }
  }
  for (const auto& t : s.local) {
    ++pending[sbKey(t.stage, t.bucket)];
    ++stagePending[t.stage];
  }
  auto depsMet = [&](uint32_t stage, uint32_t bucket) {
    for (const auto& d : plan_.stages[stage].deps) {
      if (d.perBucket) {
        auto it = pending.find(sbKey(d.stage, bucket));
        if (it != pending.end() && it->second > 0) return false;
      } else if (stagePending[d.stage] > 0) {
        return false;
      }
    }
    return true;
  };
  auto landed = [&](uint32_t stage, uint32_t bucket) {
    --pending[sbKey(stage, bucket)];
    --stagePending[stage];
  };
  auto emit = [&](double t0, double t1, int src, int dst, uint64_t bytes, uint32_t stage,
                  traces::EventPath path) -> Status {
    if (!events) return Status::ok();
    traces::Event e;
    e.tStart = t0 - epoch_;
    e.tEnd = t1 - epoch_;
    e.src = src;
    e.dst = dst;
    e.bytes = bytes;
    e.stage = static_cast<int32_t>(stage);
    e.step = step;
    e.path = path;
    return events->append(e);
  };

  struct Flight {
    size_t group;
    transport::BatchId id;
    double t0;
  };
  std::vector<Flight> flights;
  // An early return (a failed check, a timeout) must not leave our batches
  // reading buffers that are freed next (asan: use-after-free in a tcp send).
  struct DrainFlights {
    transport::Transport& transport;
    std::vector<Flight>& flights;
    double timeoutSeconds;
    ~DrainFlights() {
      for (const Flight& f : flights) (void)transport.wait(f.id, timeoutSeconds);
    }
  } drain{transport_, flights, options_.timeoutSeconds};
  std::vector<char> started(s.out.size(), 0), done(s.local.size(), 0), arrived(s.in.size(), 0);
  size_t leftOut = s.out.size(), leftLocal = s.local.size(), leftIn = s.in.size();
  size_t firstOut = 0, firstLocal = 0;  // everything before these has started / run
  std::vector<transport::Request> reqs;
  bool dirty = true;
  double lastProgress = now();
  // How long an idle round blocks: doubled while nothing moves (up to 2 ms),
  // so that many ranks on few cores leave the CPU to the threads that move
  // bytes; an arrival still wakes the wait at once.
  double idleWait = 0.0002;

  while (leftOut > 0 || leftLocal > 0 || leftIn > 0) {
    bool progress = false;
    if (dirty) {
      dirty = false;
      for (size_t i = firstLocal; i < s.local.size(); ++i) {
        const LocalTask& t = s.local[i];
        if (done[i] || !depsMet(t.stage, t.bucket)) continue;
        const double t0 = now();
        const uint8_t* src = buffer(t.srcSpace);
        uint8_t* dst = buffer(t.dstSpace);
        TIDE_RETURN_IF_ERROR(t.run(plan_, src, dst));
        done[i] = 1;
        --leftLocal;
        out.bytesLocal += t.bytes;
        landed(t.stage, t.bucket);
        TIDE_RETURN_IF_ERROR(
            emit(t0, now(), rank_, rank_, t.bytes, t.stage, traces::EventPath::kHostMem));
        dirty = progress = true;
      }
      while (firstLocal < s.local.size() && done[firstLocal]) ++firstLocal;
      for (size_t i = firstOut; i < s.out.size(); ++i) {
        const OutGroup& g = s.out[i];
        if (started[i] || !depsMet(g.stage, g.bucket)) continue;
        if (g.hop) {
          auto it = hopArrived.find(sbKey(g.stage, g.bucket));
          if (it != hopArrived.end() && !it->second[g.chunk]) continue;
        }
        if (g.runs.empty()) {
          return TIDE_ERROR(Code::kInternal, "exec: empty transfer group");
        }
        reqs.clear();
        if (sparse_) {
          // One delta block of the whole group instead of its bytes.
          TIDE_ASSIGN_OR_RETURN(auto q, sparse_->encode(i, buffers));
          reqs.push_back(q);
        } else {
          for (const Run& r : g.runs) {
            transport::Request q;
            q.op = transport::Op::kWrite;
            q.localRegion = localIds_[static_cast<int>(g.srcSpace)];
            q.localOffset = r.srcOffset;
            q.peer = g.peer;
            q.remoteRegion = remoteIds_[g.peer][static_cast<int>(g.dstSpace)];
            // Switch: odd versions land in the peer's second copy.
            if (!remoteShadowIds_.empty() && g.dstSpace == Space::kInfer && step % 2 == 1) {
              q.remoteRegion = remoteShadowIds_[g.peer];
            }
            q.remoteOffset = r.dstOffset;
            q.length = r.bytes;
            reqs.push_back(q);
          }
        }
        for (const auto& q : reqs) wire[i] += q.length;
        // The immediate comes last: requests to one peer land in order.
        reqs.back().op = transport::Op::kWriteWithImm;
        reqs.back().imm = g.unit;
        const double t0 = now();
        auto id = transport_.submit(reqs);
        if (!id.isOk()) {
          return id.status().withContext("exec: rank " + std::to_string(rank_) + " -> " +
                                         std::to_string(g.peer) + " stage " +
                                         plan_.stages[g.stage].name);
        }
        flights.push_back(Flight{i, *id, t0});
        started[i] = 1;
        progress = true;
      }
      while (firstOut < s.out.size() && started[firstOut]) ++firstOut;
    }
    auto finish = [&](size_t k) -> Status {
      const OutGroup& g = s.out[flights[k].group];
      const uint64_t bytes = wire[flights[k].group];
      TIDE_RETURN_IF_ERROR(emit(flights[k].t0, now(), rank_, g.peer, bytes, g.stage, path_));
      out.bytesSent += bytes;
      --leftOut;
      flights[k] = flights.back();
      flights.pop_back();
      return Status::ok();
    };
    auto failed = [&](size_t k, const Status& st) {
      const OutGroup& g = s.out[flights[k].group];
      return st.withContext("exec: write rank " + std::to_string(rank_) + " -> " +
                            std::to_string(g.peer) + " (stage " + plan_.stages[g.stage].name +
                            ", bucket " + std::to_string(g.bucket) + ")");
    };
    for (size_t k = 0; k < flights.size();) {
      auto r = transport_.test(flights[k].id);
      if (!r.isOk()) return failed(k, r.status());
      if (!*r) {
        ++k;
        continue;
      }
      TIDE_RETURN_IF_ERROR(finish(k));
      progress = true;
    }
    // Arrivals: block briefly only when nothing else moved.
    double wait = progress ? 0.0 : (flights.empty() && leftIn > 0 ? 0.005 : idleWait);
    while (leftIn > 0) {
      auto n = transport_.waitNotification(wait);
      if (!n.isOk()) {
        if (n.status().code() == Code::kTimeout) break;
        return n.status().withContext("exec: rank " + std::to_string(rank_) + " waiting");
      }
      wait = 0;
      if (n->imm >= s.in.size() || arrived[n->imm] || s.in[n->imm].src != n->peer) {
        return TIDE_ERROR(Code::kDataLoss,
                          "exec: rank " + std::to_string(rank_) + " got an unexpected immediate " +
                              std::to_string(n->imm) + " from rank " + std::to_string(n->peer));
      }
      const InUnit& u = s.in[n->imm];
      if (sparse_) TIDE_RETURN_IF_ERROR(sparse_->check(n->imm, buffers));
      arrived[n->imm] = 1;
      --leftIn;
      landed(u.stage, u.bucket);
      if (u.hop) hopArrived[sbKey(u.stage, u.bucket)][u.chunk] = 1;
      dirty = progress = true;
    }
    if (!flights.empty() && !progress && leftIn == 0) {
      // Only our own batches remain: let the transport finish them (a
      // finished batch is forgotten by wait(), so it is complete here).
      Status w = transport_.wait(flights.front().id, std::max(idleWait, 0.0005));
      if (w.isOk()) {
        TIDE_RETURN_IF_ERROR(finish(0));
        progress = true;
      } else if (w.code() != Code::kTimeout) {
        return failed(0, w);
      }
    }
    const double t = now();
    idleWait = progress ? 0.0002 : std::min(2 * idleWait, 0.002);
    if (progress) {
      lastProgress = t;
    } else if (t - lastProgress > options_.timeoutSeconds) {
      std::string what;
      for (size_t i = 0; i < s.in.size(); ++i) {
        if (!arrived[i]) {
          what = "; first missing: stage " + plan_.stages[s.in[i].stage].name + " bucket " +
                 std::to_string(s.in[i].bucket) + " from rank " + std::to_string(s.in[i].src);
          break;
        }
      }
      return TIDE_ERROR(Code::kTimeout,
                        "exec: rank " + std::to_string(rank_) + " made no progress for " +
                            std::to_string(options_.timeoutSeconds) + " s (" +
                            std::to_string(flights.size()) + " batches in flight, " +
                            std::to_string(leftIn) + " arrivals and " + std::to_string(leftLocal) +
                            " local tasks pending" + what + ")");
    }
  }
  if (sparse_) {
    TIDE_RETURN_IF_ERROR(sparse_->applyAll(buffers));
    const SparseCounters c = sparse_->takeCounters();
    out.bytesFull = c.fullBytes;
    out.elements = c.elements;
    out.changed = c.changed;
  } else {
    out.bytesFull = out.bytesSent;
  }
  return Status::ok();
}

Result<RankStep> RankExecutor::runStep(int step, traces::EventSink* events) {
  if (step != version_ + 1) {
    return TIDE_ERROR(Code::kFailedPrecondition, "exec: step " + std::to_string(step) +
                                                     " after version " + std::to_string(version_));
  }
  const int world = static_cast<int>(plan_.ranks.size());
  const std::string tag = "step" + std::to_string(step) + "/";
  const bool trainer = plan_.ranks[rank_].role == plan::Role::kTrainer;
  if (trainer) TIDE_RETURN_IF_ERROR(materializeTrain(step));  // the training step's output

  RankStep out;
  out.step = step;
  // Switch: the update writes the shadow while generation reads the live
  // copy; an update that fails leaves the live copy serving.
  struct AbortUpdate {
    VersionSwitch* s;
    ~AbortUpdate() {
      if (s && s->updating()) s->abortUpdate();
    }
  } abortUpdate{switch_.get()};
  if (switch_ && serving_) switch_->beginUpdate();
  TIDE_RETURN_IF_ERROR(storeBarrier(store_, tag + "pause", world, options_.timeoutSeconds));
  out.tStart = now();
  Status ts = transfer(step, events, out);
  out.tEnd = now();
  if (ts.isOk() && rank_ == options_.corruptRank && step == options_.corruptStep) {
    const uint64_t n = layouts_[rank_].spaceBytes(Space::kInfer);
    if (n > 0) buffer(Space::kInfer)[n / 2] ^= 0x01;
  }
  // Every transfer ends before any rank verifies: verification recomputes
  // the shard from the generator (CPU-bound, seconds) and, on shared cores,
  // would slow the relays and writers still running.
  if (ts.isOk()) ts = storeBarrier(store_, tag + "transferred", world, options_.timeoutSeconds);
  Status vs = ts;
  if (ts.isOk() && serving_) {  // a rank that has not joined holds nothing yet
    const double v0 = now();
    vs = verify(step, buffer(Space::kInfer));
    out.verifySeconds = now() - v0;
  }
  TIDE_RETURN_IF_ERROR(store_.set(tag + "result/r" + std::to_string(rank_),
                                  vs.isOk() ? std::string("ok") : vs.toString()));
  if (!ts.isOk()) return ts;  // peers time out on what this rank did not send
  TIDE_RETURN_IF_ERROR(storeBarrier(store_, tag + "done", world, options_.timeoutSeconds));
  for (int r = 0; r < world; ++r) {
    TIDE_ASSIGN_OR_RETURN(
        std::string res, store_.get(tag + "result/r" + std::to_string(r), options_.timeoutSeconds));
    if (res != "ok") {
      return TIDE_ERROR(Code::kDataLoss, "step " + std::to_string(step) +
                                             " not bit-exact on rank " + std::to_string(r) + ": " +
                                             res);
    }
  }
  version_ = step;
  if (sparse_) sparse_->commit(bufferArray());  // the next delta is encoded against this version
  if (options_.shadowSwitch) {
    double pause = 0, at = 0;
    if (switch_ && switch_->updating()) {
      pause = switch_->switchTo(step);
      at = now();
      switchCopies();
    }
    TIDE_RETURN_IF_ERROR(publishSwitch(store_, step, rank_, pause, at,
                                       switch_ ? switch_->takeStats() : GenerationStats{},
                                       switch_ ? switch_->bytes() : 0));
    if (rank_ == 0 && options_.report) {
      TIDE_RETURN_IF_ERROR(
          gatherSwitches(store_, step, world, options_.timeoutSeconds, *options_.report));
    }
  }
  if (storePath_ && step == options_.store.joinStep + 1) {
    const auto& joining = options_.store.joinRanks;
    std::vector<int> others;  // the engines that kept serving
    for (int r = 0; r < world; ++r) {
      if (plan_.ranks[r].role != plan::Role::kTrainer &&
          std::find(joining.begin(), joining.end(), r) == joining.end()) {
        others.push_back(r);
      }
    }
    if (std::find(others.begin(), others.end(), rank_) != others.end()) {
      TIDE_RETURN_IF_ERROR(publishWindow(store_, step, rank_, out.tStart, out.tEnd));
    }
    if (rank_ == 0 && options_.report) {
      TIDE_RETURN_IF_ERROR(
          gatherJoin(store_, step, joining, others, options_.timeoutSeconds, *options_.report));
    }
  }
  return out;
}

}  // namespace tide::exec
