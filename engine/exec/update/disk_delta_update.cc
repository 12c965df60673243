// Disk-delta updates: trainers write delta files to a shared directory,
// inference ranks rebuild their shards from them (disk_delta_path.h).

#include <memory>

#include "engine/core/clock.h"
#include "engine/exec/update/disk_delta_path.h"
#include "engine/exec/update/update_options.h"
#include "engine/exec/update/update_path.h"

namespace tide::exec {

namespace {

class DiskDeltaUpdate final : public UpdatePath {
 public:
  explicit DiskDeltaUpdate(const UpdateEnv& env) : env_(env) {}

  Result<bool> setUp(UpdateHost& host) override {
    const ExecOptions& o = env_.options;
    TIDE_ASSIGN_OR_RETURN(
        disk_,
        DiskDeltaPath::create(env_.plan, env_.layouts, env_.schedule, env_.store,
                              DiskDeltaPathOptions{o.deltaDir, o.baseEvery, o.timeoutSeconds}));
    // Version 0 goes to the directory as a base, and every inference rank
    // rebuilds its mirrors from it.
    if (env_.plan.ranks[env_.rank].role == plan::Role::kTrainer) {
      TIDE_RETURN_IF_ERROR(host.materializeTrain(0));
    }
    DiskDeltaCounters ignored;
    TIDE_RETURN_IF_ERROR(disk_->step(0, host.buffers(), ignored));
    TIDE_RETURN_IF_ERROR(host.loadStart());
    return true;
  }

  Status step(int step, UpdateHost& host, traces::EventSink* events, RankStep& out) override {
    DiskDeltaCounters c;
    const double t0 = nowSeconds();
    TIDE_RETURN_IF_ERROR(disk_->step(static_cast<uint64_t>(step), host.buffers(), c));
    out.bytesSent = c.fileBytes;
    out.bytesFull = c.sliceBytes;
    out.bytesRead = c.bytesRead;
    out.elements = c.elements;
    out.changed = c.changed;
    return rankEvent(env_, host, events, step, t0, c.fileBytes + c.bytesRead,
                     traces::EventPath::kDisk);
  }

 private:
  const UpdateEnv env_;
  std::unique_ptr<DiskDeltaPath> disk_;
};

}  // namespace

Result<std::unique_ptr<UpdatePath>> makeDiskDeltaUpdate(const UpdateEnv& env) {
  return std::unique_ptr<UpdatePath>(new DiskDeltaUpdate(env));
}

}  // namespace tide::exec
