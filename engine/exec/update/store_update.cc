// Weight-store updates: versioned snapshots through the ranks' store
// segments (store_path.h), with the elastic join of late inference ranks.

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "engine/core/clock.h"
#include "engine/exec/executor/exec_report.h"
#include "engine/exec/update/update_options.h"
#include "engine/exec/update/update_path.h"
#include "engine/exec/weight_store/store_path.h"

namespace tide::exec {

using plan::Space;

namespace {

class StoreUpdate final : public UpdatePath {
 public:
  explicit StoreUpdate(const UpdateEnv& env) : env_(env) {}

  // Version 0 (or a resumed run's start version) is imported into the store
  // and every inference rank loads it from there into a poisoned shard,
  // checked bit-exact (a skipped load cannot pass). A joining rank stays
  // empty until it joins.
  Result<bool> setUp(UpdateHost& host) override {
    const ExecOptions& o = env_.options;
    StorePathOptions so = o.store;
    so.timeoutSeconds = o.timeoutSeconds;
    so.readIntoShard = o.shadowSwitch;  // the switch's shadow is the staging copy
    StorePath::RegionIds ids{};
    for (int s = 0; s < kSpaceCount; ++s) ids[s] = host.region(static_cast<Space>(s));
    TIDE_ASSIGN_OR_RETURN(store_, StorePath::create(env_.plan, env_.layouts, env_.schedule,
                                                    env_.transport, env_.store, ids, so));
    const int v0 = o.startVersion;
    const bool serving = store_->reads(env_.rank, static_cast<uint64_t>(v0));
    const uint64_t inferBytes = env_.layouts[env_.rank].spaceBytes(Space::kInfer);
    const auto buffers = host.buffers();
    if (inferBytes > 0) std::memset(buffers[static_cast<int>(Space::kInfer)], 0xA5, inferBytes);
    if (env_.plan.ranks[env_.rank].role == plan::Role::kTrainer) {
      TIDE_RETURN_IF_ERROR(host.materializeTrain(v0));
    }
    StoreCounters ignored;
    store_->readInto(host.inferTargetRegion());  // nothing serves it yet
    TIDE_RETURN_IF_ERROR(store_->step(static_cast<uint64_t>(v0), buffers, ignored));
    if (serving) TIDE_RETURN_IF_ERROR(host.verifyTarget(v0).status());
    return serving;
  }

  // A joining rank's first update: the version the coordinator leased it is
  // pulled while the others go on with this update, and checked bit-exact
  // before the rank serves it (with a switch: into the shadow, then switched).
  Status join(int step, UpdateHost& host) override {
    if (!store_->joinsAt(static_cast<uint64_t>(step))) return Status::ok();
    const double t0 = nowSeconds();
    host.beginJoin();
    StoreCounters c;
    store_->readInto(host.inferTargetRegion());
    TIDE_ASSIGN_OR_RETURN(uint64_t v, store_->join(host.buffers(), c));
    const double pulled = nowSeconds() - t0;
    TIDE_RETURN_IF_ERROR(host.finishJoin(static_cast<int>(v)));
    return publishJoin(env_.store, step, env_.rank, nowSeconds() - t0, pulled, c.bytesRead, v);
  }

  Status step(int step, UpdateHost& host, traces::EventSink* events, RankStep& out) override {
    StoreCounters c;
    const double t0 = nowSeconds();
    store_->readInto(host.inferTargetRegion());
    TIDE_RETURN_IF_ERROR(store_->step(static_cast<uint64_t>(step), host.buffers(), c));
    out.bytesSent = c.bytesWritten;
    out.bytesFull = c.bytesWritten;
    out.bytesRead = c.bytesRead;
    return rankEvent(env_, host, events, step, t0, c.bytesWritten + c.bytesRead, env_.path);
  }

  // After the join step: the engines that kept serving publish their update
  // window, and rank 0 reports the join against them.
  Status commit(int step, UpdateHost& host, const RankStep& out) override {
    (void)host;
    const ExecOptions& o = env_.options;
    if (step != o.store.joinStep + 1) return Status::ok();
    const int world = static_cast<int>(env_.plan.ranks.size());
    const auto& joining = o.store.joinRanks;
    std::vector<int> others;
    for (int r = 0; r < world; ++r) {
      if (env_.plan.ranks[r].role != plan::Role::kTrainer &&
          std::find(joining.begin(), joining.end(), r) == joining.end()) {
        others.push_back(r);
      }
    }
    if (std::find(others.begin(), others.end(), env_.rank) != others.end()) {
      TIDE_RETURN_IF_ERROR(publishWindow(env_.store, step, env_.rank, out.tStart, out.tEnd));
    }
    if (env_.rank == 0 && o.report) {
      TIDE_RETURN_IF_ERROR(
          gatherJoin(env_.store, step, joining, others, o.timeoutSeconds, *o.report));
    }
    return Status::ok();
  }

 private:
  const UpdateEnv env_;
  std::unique_ptr<StorePath> store_;
};

}  // namespace

Result<std::unique_ptr<UpdatePath>> makeStoreUpdate(const UpdateEnv& env) {
  return std::unique_ptr<UpdatePath>(new StoreUpdate(env));
}

}  // namespace tide::exec
