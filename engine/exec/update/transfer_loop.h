#pragma once
// The event loop that runs a rank's schedule (rank_schedule.h) for the
// update paths that write groups peer to peer (full, sparse): ready batches
// are submitted, ready local copies run, finished batches and arriving
// immediates are collected, so gather, convert and write of different
// buckets overlap. Every transfer is recorded as a trace event.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/core/status.h"
#include "engine/exec/update/update_path.h"

namespace tide::exec {

// What a group puts on the wire and what an arrival asks (bytes or deltas).
class GroupIo {
 public:
  virtual ~GroupIo() = default;
  // The requests that write out-group `group` (schedule.out[group]) of
  // update `step`, at least one; the loop makes the last one carry the
  // group's immediate (requests to one peer land in order).
  virtual Status requests(size_t group, int step, std::vector<transport::Request>& out) = 0;
  // Incoming unit `unit` arrived (its immediate came).
  virtual Status arrived(uint32_t unit) {
    (void)unit;
    return Status::ok();
  }
};

// Runs update `step`'s schedule; fills out's bytesSent and bytesLocal.
// Fails on a transport error, an unexpected immediate, an abort
// (options.aborted) or options.timeoutSeconds without progress.
Status runTransferLoop(const UpdateEnv& env, UpdateHost& host, GroupIo& io, int step,
                       traces::EventSink* events, RankStep& out);

}  // namespace tide::exec
