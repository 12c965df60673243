#include "engine/exec/rank/rank_executor.h"

#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <span>
#include <string>

#include "engine/core/clock.h"
#include "engine/core/parse.h"
#include "engine/exec/executor/device_shards.h"
#include "engine/exec/executor/shard_content.h"

namespace tide::exec {

using plan::Space;

namespace {

void addStats(GenerationStats& total, const GenerationStats& g) {
  total.reads += g.reads;
  total.readsDuringUpdate += g.readsDuringUpdate;
  total.torn += g.torn;
  total.maxPinSeconds = std::max(total.maxPinSeconds, g.maxPinSeconds);
}

}  // namespace

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

RankExecutor::~RankExecutor() = default;

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
  TIDE_RETURN_IF_ERROR(checkUpdateOptions(options));
  std::unique_ptr<RankExecutor> e(
      new RankExecutor(plan, layouts, weights, transport, store, options));
  TIDE_RETURN_IF_ERROR(e->setup());
  return e;
}

Status RankExecutor::setup() {
  TIDE_ASSIGN_OR_RETURN(units_, plan::Schedule::build(plan_));
  TIDE_ASSIGN_OR_RETURN(schedule_,
                        RankSchedule::build(plan_, units_, layouts_, static_cast<uint32_t>(rank_)));
  const traces::EventPath path = eventPathOf(transport_.capabilities().backend);
  TIDE_RETURN_IF_ERROR(registerSpaces());
  if (rank_ == 0) TIDE_RETURN_IF_ERROR(store_.set("epoch", std::to_string(nowSeconds())));
  TIDE_ASSIGN_OR_RETURN(std::string epoch, store_.get("epoch", options_.timeoutSeconds));
  TIDE_ASSIGN_OR_RETURN(epoch_, parseDouble(epoch, "epoch in the rendezvous store"));
  const UpdateEnv env{plan_,    layouts_,  weights_, transport_, store_,
                      options_, schedule_, rank_,    path};
  TIDE_ASSIGN_OR_RETURN(update_, makeUpdatePath(env));
  TIDE_ASSIGN_OR_RETURN(serving_, update_->setUp(*this));
  setupSwitch();
  return storeBarrier(store_, "setup", static_cast<int>(plan_.ranks.size()),
                      options_.timeoutSeconds);
}

// Every space the rank holds, registered once and published; with a
// switch, the inference shard's second copy too.
Status RankExecutor::registerSpaces() {
  const RankLayout& me = layouts_[rank_];
  // Device memory first, before anything is registered or published.
  TIDE_ASSIGN_OR_RETURN(auto memory, openShardMemory(options_.shardMemory, weights_, rank_));
  for (int s = 0; s < kSpaceCount; ++s) {
    const uint64_t bytes = me.spaceBytes(static_cast<Space>(s));
    if (bytes == 0) continue;
    TIDE_ASSIGN_OR_RETURN(spaces_[s], registerTimed(bytes));
    TIDE_RETURN_IF_ERROR(store_.set(regionKey(rank_, s), spaces_[s].descriptor().serialize()));
  }
  TIDE_RETURN_IF_ERROR(checkSwitch());
  if (options_.shardSource) {
    home_ = makeSourceShardHome(*options_.shardSource, me, rank_);
  } else {
    TIDE_ASSIGN_OR_RETURN(home_, makeShardHome(std::move(memory), weights_, me, rank_,
                                               spaces_[static_cast<int>(Space::kTrain)].data(),
                                               spaces_[kInferSpace].data(), options_.staging));
  }
  const uint64_t inferBytes = me.spaceBytes(Space::kInfer);
  if (options_.shadowSwitch && inferBytes > 0) {
    TIDE_ASSIGN_OR_RETURN(inferShadow_, registerTimed(inferBytes));
    TIDE_RETURN_IF_ERROR(store_.set(shadowKey(rank_), inferShadow_.descriptor().serialize()));
  }
  return Status::ok();
}

Status RankExecutor::checkSwitch() const {
  if (!options_.shadowSwitch) return Status::ok();
  for (const auto& g : schedule_.out) {
    if (g.srcSpace == Space::kInfer) {
      return TIDE_ERROR(Code::kInvalidArgument,
                        "switch: needs a p2p plan (this one forwards from inference shards)");
    }
  }
  return Status::ok();
}

Result<transport::Registration> RankExecutor::registerTimed(uint64_t bytes) {
  auto memory = std::make_unique<uint8_t[]>(bytes);
  const double t0 = nowSeconds();
  auto region = transport::Registration::own(transport_, std::move(memory), bytes);
  setupWork_.registerSeconds += nowSeconds() - t0;
  if (region.isOk()) {
    ++setupWork_.registrations;
    setupWork_.registeredBytes += bytes;
  }
  return region;
}

void RankExecutor::setupSwitch() {
  if (!inferShadow_.registered()) return;
  // A poison pattern is no version generation could serve.
  const bool v0 = serving_ && !startPoisoned_;
  switch_ = std::make_unique<VersionSwitch>(spaces_[kInferSpace].data(), inferShadow_.data(),
                                            layouts_[rank_].spaceBytes(Space::kInfer),
                                            v0 ? options_.startVersion : -1);
  switch_->startGeneration(options_.generationIntervalSeconds);
}

ServedVersion RankExecutor::serving() const {
  if (switch_) return switch_->serving();
  const uint64_t n = layouts_[rank_].spaceBytes(Space::kInfer);
  return ServedVersion{serving_ ? version_ : -1,
                       n ? XXH3_64bits(spaces_[kInferSpace].data(), n) : 0};
}

std::span<const uint8_t> RankExecutor::liveShard() const {
  const uint64_t n = layouts_[rank_].spaceBytes(Space::kInfer);
  if (n == 0) return {};
  return {switch_ ? switch_->live() : spaces_[kInferSpace].data(), n};
}

GenerationStats RankExecutor::generationTotals() {
  if (switch_) addStats(generated_, switch_->takeStats());
  return generated_;
}

// After a switch the live copy is the one the update wrote.
void RankExecutor::switchCopies() {
  std::swap(spaces_[kInferSpace], inferShadow_);
}

UpdateHost::Buffers RankExecutor::buffers() {
  Buffers b{};
  for (int s = 0; s < kSpaceCount; ++s) b[s] = buffer(static_cast<Space>(s));
  return b;
}

Status RankExecutor::materializeTrain(int version) {
  return home_->fillTrain(version, buffer(Space::kTrain));
}

Status RankExecutor::loadStart() {
  const uint64_t inferBytes = layouts_[rank_].spaceBytes(Space::kInfer);
  const bool poison = options_.hooks && options_.hooks->poisonTargets();
  startPoisoned_ = poison;
  if (options_.resumeShard && inferBytes > 0) {
    std::memcpy(buffer(Space::kInfer), options_.resumeShard, inferBytes);
  } else if (options_.shardSource && !poison) {
    TIDE_RETURN_IF_ERROR(options_.shardSource->loadInfer(layouts_[rank_], buffer(Space::kInfer)));
  } else {
    TIDE_RETURN_IF_ERROR(fillInferShard(weights_, layouts_[rank_], options_.startVersion, poison,
                                        buffer(Space::kInfer)));
  }
  // Shards elsewhere load the start version from host memory, as an engine
  // loads its checkpoint.
  return home_->afterTransfer();
}

void RankExecutor::afterTransfer(int step) {
  if (!options_.hooks) return;
  options_.hooks->afterTransfer(rank_, step,
                                {buffer(Space::kInfer), layouts_[rank_].spaceBytes(Space::kInfer)});
}

void RankExecutor::beginJoin() {
  if (switch_) switch_->beginUpdate();
}

Status RankExecutor::finishJoin(int version) {
  TIDE_RETURN_IF_ERROR(
      verifyTarget(version).status().withContext("join: rank " + std::to_string(rank_)));
  if (switch_) {
    (void)switch_->switchTo(version);
    switchCopies();
    switch_->beginUpdate();  // this step's update goes to the other copy
  }
  serving_ = true;
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
  out.tStart = nowSeconds();
  // Shards in device memory: the D2H into the staging replica (bucketed, it
  // overlaps the transfer, which sends what has landed) and the H2D out of
  // it are on the update's critical path, inside its window. The
  // test hooks touch the replica before the H2D, so what they do reaches
  // the shard.
  Status ts = home_->beforeTransfer();
  if (ts.isOk()) ts = update_->join(step, *this);
  if (ts.isOk()) ts = update_->step(step, *this, events, out);
  if (ts.isOk()) {
    afterTransfer(step);
    ts = home_->afterTransfer();
    const ShardHome::StagingTimes staged = home_->stagingTimes();
    out.stageOutSeconds = staged.outSeconds;
    out.stageInSeconds = staged.inSeconds;
  }
  out.tEnd = nowSeconds();
  // Every transfer ends before any rank verifies: verification recomputes
  // the shard from the generator (CPU-bound, seconds) and, on shared cores,
  // would slow the relays and writers still running.
  if (ts.isOk()) ts = storeBarrier(store_, tag + "transferred", world, options_.timeoutSeconds);
  Status vs = ts;
  if (ts.isOk() && serving_) {  // a rank that has not joined holds nothing yet
    const double v0 = nowSeconds();
    auto checked = verifyTarget(step);
    out.verifySeconds = nowSeconds() - v0;
    vs = checked.status();
    if (checked.isOk()) out.bytesVerified = *checked;
  }
  TIDE_RETURN_IF_ERROR(publishVerified(store_, step, rank_, vs));
  if (!ts.isOk()) return ts;  // peers time out on what this rank did not send
  TIDE_RETURN_IF_ERROR(storeBarrier(store_, tag + "done", world, options_.timeoutSeconds));
  TIDE_RETURN_IF_ERROR(gatherVerified(store_, step, world, options_.timeoutSeconds));
  TIDE_RETURN_IF_ERROR(commit(step, out));
  return out;
}

Status RankExecutor::commit(int step, RankStep& out) {
  if (options_.commitGate) {
    TIDE_ASSIGN_OR_RETURN(bool commit, options_.commitGate(step));
    if (!commit) {
      return TIDE_ERROR(Code::kCancelled,
                        "step " + std::to_string(step) + " abandoned before its commit");
    }
  }
  version_ = step;
  if (options_.shadowSwitch) {
    double pause = 0, at = 0;
    if (switch_ && switch_->updating()) {
      pause = switch_->switchTo(step);
      at = nowSeconds();
      switchCopies();
    }
    const GenerationStats g = switch_ ? switch_->takeStats() : GenerationStats{};
    addStats(generated_, g);
    TIDE_RETURN_IF_ERROR(
        publishSwitch(store_, step, rank_, pause, at, g, switch_ ? switch_->bytes() : 0));
    if (rank_ == 0 && options_.report) {
      const int world = static_cast<int>(plan_.ranks.size());
      TIDE_RETURN_IF_ERROR(
          gatherSwitches(store_, step, world, options_.timeoutSeconds, *options_.report));
    }
  }
  return update_->commit(step, *this, out);
}

}  // namespace tide::exec
