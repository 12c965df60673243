// Sparse updates: each group goes as one delta block into the target's
// inbox (sparse_path.h), in the schedule's event loop (transfer_loop.h); the
// target checks every block as it arrives and applies them all at the end.

#include <memory>
#include <vector>

#include "engine/exec/update/sparse_path.h"
#include "engine/exec/update/transfer_loop.h"
#include "engine/exec/update/update_options.h"
#include "engine/exec/update/update_path.h"

namespace tide::exec {

namespace {

class SparseUpdate final : public UpdatePath, GroupIo {
 public:
  explicit SparseUpdate(const UpdateEnv& env) : env_(env) {}

  Result<bool> setUp(UpdateHost& host) override {
    TIDE_ASSIGN_OR_RETURN(
        sparse_, SparsePath::create(env_.plan, env_.layouts, env_.schedule, env_.weights,
                                    env_.transport, env_.store, env_.options.timeoutSeconds));
    // Deltas apply to version 0, which every rank holds in place.
    TIDE_RETURN_IF_ERROR(host.loadStart());
    return true;
  }

  Status step(int step, UpdateHost& host, traces::EventSink* events, RankStep& out) override {
    (void)sparse_->takeCounters();  // a failed step's counts do not carry over
    buffers_ = host.buffers();
    TIDE_RETURN_IF_ERROR(runTransferLoop(env_, host, *this, step, events, out));
    TIDE_RETURN_IF_ERROR(sparse_->applyAll(buffers_));
    const SparseCounters c = sparse_->takeCounters();
    out.bytesFull = c.fullBytes;
    out.elements = c.elements;
    out.changed = c.changed;
    return Status::ok();
  }

  // The next delta is encoded against this version.
  Status commit(int step, UpdateHost& host, const RankStep& out) override {
    (void)step;
    (void)out;
    sparse_->commit(host.buffers());
    return Status::ok();
  }

  // One delta block of the whole group instead of its bytes.
  Status requests(size_t group, int step, std::vector<transport::Request>& out) override {
    (void)step;
    TIDE_ASSIGN_OR_RETURN(auto q, sparse_->encode(group, buffers_));
    out.push_back(q);
    return Status::ok();
  }

  Status arrived(uint32_t unit) override { return sparse_->check(unit, buffers_); }

 private:
  const UpdateEnv env_;
  std::unique_ptr<SparsePath> sparse_;
  UpdateHost::Buffers buffers_{};  // of the step that runs
};

}  // namespace

Result<std::unique_ptr<UpdatePath>> makeSparseUpdate(const UpdateEnv& env) {
  if (env.options.hooks && env.options.hooks->poisonTargets()) {
    return TIDE_ERROR(Code::kInvalidArgument,
                      "sparse: deltas apply to version 0, not to a poison pattern");
  }
  return std::unique_ptr<UpdatePath>(new SparseUpdate(env));
}

}  // namespace tide::exec
