#include "engine/exec/rank_executor.h"

#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <span>
#include <string>
#include <unordered_map>

#include "engine/core/parse.h"
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
      rank_(transport.rank()),
      version_(options.startVersion) {}

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
  if (options.startVersion < 0 || options.startVersion > weights.maxVersion()) {
    return TIDE_ERROR(Code::kInvalidArgument,
                      "exec: cannot start at version " + std::to_string(options.startVersion));
  }
  if (options.startVersion > 0 && options.mode != UpdateMode::kFull &&
      options.mode != UpdateMode::kStore) {
    return TIDE_ERROR(Code::kInvalidArgument,
                      "exec: only full and store updates resume at a later version (deltas "
                      "apply to the version before, which a restarted rank does not hold)");
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
    TIDE_ASSIGN_OR_RETURN(auto region, registerTimed(buffers_[s].get(), bytes));
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
    TIDE_ASSIGN_OR_RETURN(auto region, registerTimed(inferShadow_.get(), inferBytes));
    shadowLocalId_ = region.id;
    shadowRegistered_ = true;
    TIDE_RETURN_IF_ERROR(store_.set(shadowKey(rank_), region.descriptor.serialize()));
  }
  if (rank_ == 0) TIDE_RETURN_IF_ERROR(store_.set("epoch", std::to_string(now())));
  TIDE_ASSIGN_OR_RETURN(std::string epoch, store_.get("epoch", options_.timeoutSeconds));
  TIDE_ASSIGN_OR_RETURN(epoch_, parseDouble(epoch, "epoch in the rendezvous store"));

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
    // A resumed run imports its start version the same way.
    const int v0 = options_.startVersion;
    serving_ = storePath_->reads(rank_, static_cast<uint64_t>(v0));
    if (inferBytes > 0) std::memset(buffer(Space::kInfer), 0xA5, inferBytes);
    if (plan_.ranks[rank_].role == plan::Role::kTrainer) TIDE_RETURN_IF_ERROR(materializeTrain(v0));
    StoreCounters ignored;
    storePath_->readInto(localIds_[kInferSpace]);  // nothing serves it yet
    TIDE_RETURN_IF_ERROR(storePath_->step(static_cast<uint64_t>(v0), bufferArray(), ignored));
    if (serving_) TIDE_RETURN_IF_ERROR(verify(v0).status());
  }
  // Every other mode starts from version 0 in place (sparse deltas apply
  // to it), or resumes from the shard it held or its checkpoint.
  if (options_.mode != UpdateMode::kStore) {
    if (options_.resumeShard && inferBytes > 0) {
      std::memcpy(buffer(Space::kInfer), options_.resumeShard, inferBytes);
    } else {
      TIDE_RETURN_IF_ERROR(materializeInfer(options_.startVersion));
    }
  }
  TIDE_RETURN_IF_ERROR(setupSwitch());
  return storeBarrier(store_, "setup", static_cast<int>(plan_.ranks.size()),
                      options_.timeoutSeconds);
}

Result<transport::LocalRegion> RankExecutor::registerTimed(uint8_t* base, uint64_t bytes) {
  const double t0 = now();
  auto region = transport_.registerRegion(base, bytes);
  setupWork_.registerSeconds += now() - t0;
  if (region.isOk()) {
    ++setupWork_.registrations;
    setupWork_.registeredBytes += bytes;
  }
  return region;
}

Status RankExecutor::setupSwitch() {
  if (!inferShadow_) return Status::ok();
  // A poison pattern is no version generation could serve.
  const bool v0 = serving_ && (options_.mode == UpdateMode::kStore || !options_.poisonTargets);
  switch_ = std::make_unique<VersionSwitch>(buffers_[kInferSpace].get(), inferShadow_.get(),
                                            layouts_[rank_].spaceBytes(Space::kInfer),
                                            v0 ? options_.startVersion : -1);
  switch_->startGeneration(options_.generationIntervalSeconds);
  return Status::ok();
}

ServedVersion RankExecutor::serving() const {
  if (switch_) return switch_->serving();
  const uint64_t n = layouts_[rank_].spaceBytes(Space::kInfer);
  return ServedVersion{serving_ ? version_ : -1,
                       n ? XXH3_64bits(buffers_[kInferSpace].get(), n) : 0};
}

std::span<const uint8_t> RankExecutor::liveShard() const {
  const uint64_t n = layouts_[rank_].spaceBytes(Space::kInfer);
  if (n == 0) return {};
  return {switch_ ? switch_->live() : buffers_[kInferSpace].get(), n};
}

namespace {
void addStats(GenerationStats& total, const GenerationStats& g) {
  total.reads += g.reads;
  total.readsDuringUpdate += g.readsDuringUpdate;
  total.torn += g.torn;
  total.maxPinSeconds = std::max(total.maxPinSeconds, g.maxPinSeconds);
}
}  // namespace

GenerationStats RankExecutor::generationTotals() {
  if (switch_) addStats(generated_, switch_->takeStats());
  return generated_;
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

Result<uint64_t> RankExecutor::verify(int version, const uint8_t* base) const {
  uint64_t checked = 0;
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
    checked += p.bytes;
  }
  return checked;
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
                           .status()
                           .withContext("join: rank " + std::to_string(rank_)));
  if (switch_) {
    (void)switch_->switchTo(static_cast<int>(v));
    switchCopies();
    switch_->beginUpdate();  // this step's update goes to the other copy
  }
  serving_ = true;
  return publishJoin(store_, step, rank_, now() - t0, pulled, c.bytesRead, v);
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
    auto checked = verify(step, buffer(Space::kInfer));
    out.verifySeconds = now() - v0;
    vs = checked.status();
    if (checked.isOk()) out.bytesVerified = *checked;
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
  if (options_.commitGate) {
    TIDE_ASSIGN_OR_RETURN(bool commit, options_.commitGate(step));
    if (!commit) {
      return TIDE_ERROR(Code::kCancelled,
                        "step " + std::to_string(step) + " abandoned before its commit");
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
    const GenerationStats g = switch_ ? switch_->takeStats() : GenerationStats{};
    addStats(generated_, g);
    TIDE_RETURN_IF_ERROR(
        publishSwitch(store_, step, rank_, pause, at, g, switch_ ? switch_->bytes() : 0));
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
