// Full updates (broadcast, p2p): every group's bytes are written one-sided
// into the peers' buffers, in the schedule's event loop (transfer_loop.h).

#include <array>
#include <string>
#include <vector>

#include "engine/exec/update/transfer_loop.h"
#include "engine/exec/update/update_options.h"
#include "engine/exec/update/update_path.h"

namespace tide::exec {

using plan::Space;

namespace {

class FullUpdate final : public UpdatePath, GroupIo {
 public:
  explicit FullUpdate(const UpdateEnv& env) : env_(env) {}

  Result<bool> setUp(UpdateHost& host) override {
    host_ = &host;
    TIDE_RETURN_IF_ERROR(importTargets());
    // Every rank starts from version 0 in place, or resumes from the shard
    // it held or its checkpoint.
    TIDE_RETURN_IF_ERROR(host.loadStart());
    return true;
  }

  Status step(int step, UpdateHost& host, traces::EventSink* events, RankStep& out) override {
    TIDE_RETURN_IF_ERROR(runTransferLoop(env_, host, *this, step, events, out));
    out.bytesFull = out.bytesSent;
    return Status::ok();
  }

  Status requests(size_t group, int step, std::vector<transport::Request>& out) override {
    const OutGroup& g = env_.schedule.out[group];
    for (const Run& r : g.runs) {
      transport::Request q;
      q.op = transport::Op::kWrite;
      q.localRegion = host_->region(g.srcSpace);
      q.localOffset = r.srcOffset;
      q.peer = g.peer;
      q.remoteRegion = remoteIds_[g.peer][static_cast<int>(g.dstSpace)];
      // Switch: odd versions land in the peer's second copy
      // (counted from the start version: a resumed run's live copy is its first.)
      if (!remoteShadowIds_.empty() && g.dstSpace == Space::kInfer &&
          (step - env_.options.startVersion) % 2 == 1) {
        q.remoteRegion = remoteShadowIds_[g.peer];
      }
      q.remoteOffset = r.dstOffset;
      q.length = r.bytes;
      out.push_back(q);
    }
    return Status::ok();
  }

 private:
  // The regions (and with a switch, the second copies) of the peers this
  // rank writes to, as the executor published them.
  Status importTargets() {
    const size_t world = env_.plan.ranks.size();
    const double timeout = env_.options.timeoutSeconds;
    remoteIds_.assign(world, {});
    std::vector<std::array<bool, kSpaceCount>> imported(world);
    for (const auto& g : env_.schedule.out) {
      const int s = static_cast<int>(g.dstSpace);
      if (imported[g.peer][s]) continue;
      TIDE_ASSIGN_OR_RETURN(std::string bytes, env_.store.get(regionKey(g.peer, s), timeout));
      TIDE_ASSIGN_OR_RETURN(auto remote, transport::RemoteRegion::deserialize(bytes));
      TIDE_RETURN_IF_ERROR(env_.transport.importRegion(remote));
      remoteIds_[g.peer][s] = remote.id;
      imported[g.peer][s] = true;
      if (env_.options.shadowSwitch && g.dstSpace == Space::kInfer) {
        if (remoteShadowIds_.empty()) remoteShadowIds_.assign(world, 0);
        TIDE_ASSIGN_OR_RETURN(std::string sb, env_.store.get(shadowKey(g.peer), timeout));
        TIDE_ASSIGN_OR_RETURN(auto shadow, transport::RemoteRegion::deserialize(sb));
        TIDE_RETURN_IF_ERROR(env_.transport.importRegion(shadow));
        remoteShadowIds_[g.peer] = shadow.id;
      }
    }
    return Status::ok();
  }

  const UpdateEnv env_;
  UpdateHost* host_ = nullptr;
  // remoteIds_[peer][space]: imported region ids of the peers this rank writes to.
  std::vector<std::array<uint32_t, kSpaceCount>> remoteIds_;
  std::vector<uint32_t> remoteShadowIds_;  // the peers' second copies (switch)
};

}  // namespace

Result<std::unique_ptr<UpdatePath>> makeFullUpdate(const UpdateEnv& env) {
  return std::unique_ptr<UpdatePath>(new FullUpdate(env));
}

}  // namespace tide::exec
