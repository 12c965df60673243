#include "engine/exec/update/update_path.h"

#include <string>

#include "engine/core/clock.h"
#include "engine/exec/update/update_options.h"

namespace tide::exec {

std::string regionKey(int rank, int space) {
  return "region/r" + std::to_string(rank) + "/s" + std::to_string(space);
}

std::string shadowKey(int rank) {
  return "region/r" + std::to_string(rank) + "/shadow";
}

traces::EventPath eventPathOf(const std::string& backend) {
  if (backend == "tcp") return traces::EventPath::kTcp;
  if (backend == "shm") return traces::EventPath::kShm;
  if (backend == "rdma") return traces::EventPath::kRdma;
  if (backend == "nccl") return traces::EventPath::kNccl;
  return traces::EventPath::kUnknown;
}

Status checkUpdateOptions(const ExecOptions& o) {
  const bool whole = o.mode == UpdateMode::kFull || o.mode == UpdateMode::kStore;
  if (o.startVersion > 0 && !whole) {
    return TIDE_ERROR(Code::kInvalidArgument,
                      "exec: only full and store updates resume at a later version (deltas "
                      "apply to the version before, which a restarted rank does not hold)");
  }
  if (o.shadowSwitch && !whole) {
    return TIDE_ERROR(Code::kInvalidArgument,
                      "switch: a shadow copy takes full updates (p2p, broadcast) or store "
                      "ones, not deltas (they apply to the version before)");
  }
  if (o.shardMemory && (o.mode != UpdateMode::kFull || o.shadowSwitch)) {
    return TIDE_ERROR(Code::kInvalidArgument,
                      "device memory: shards on the device take full updates in place (p2p, "
                      "broadcast), not deltas, the store or a shadow switch");
  }
  if (o.shardSource && (o.mode != UpdateMode::kFull || o.shardMemory)) {
    return TIDE_ERROR(Code::kInvalidArgument,
                      "caller's shards: they take full updates (p2p, broadcast) in host memory; "
                      "deltas and the store are computed from the generator");
  }
  return Status::ok();
}

Result<std::unique_ptr<UpdatePath>> makeUpdatePath(const UpdateEnv& env) {
  const ExecOptions& o = env.options;
  if (o.mode != UpdateMode::kFull) {
    for (int s = 0; s < kSpaceCount; ++s) {
      for (const auto& p : env.layouts[env.rank].placed(static_cast<plan::Space>(s))) {
        if (p.dtype == workloads::DType::kFP8E4M3) {
          return TIDE_ERROR(Code::kUnimplemented,
                            "exec: FP8 inference weights take full updates (p2p, broadcast); "
                            "sparse, disk-delta and store updates are bf16 only");
        }
      }
    }
  }
  switch (o.mode) {
    case UpdateMode::kFull:
      return makeFullUpdate(env);
    case UpdateMode::kSparse:
      return makeSparseUpdate(env);
    case UpdateMode::kDiskDelta:
      return makeDiskDeltaUpdate(env);
    case UpdateMode::kStore:
      return makeStoreUpdate(env);
  }
  return TIDE_ERROR(Code::kInvalidArgument, "exec: unknown update mode");
}

Status rankEvent(const UpdateEnv& env, const UpdateHost& host, traces::EventSink* events, int step,
                 double t0, uint64_t bytes, traces::EventPath path) {
  if (!events || bytes == 0) return Status::ok();
  traces::Event e;
  e.tStart = t0 - host.epoch();
  e.tEnd = nowSeconds() - host.epoch();
  e.src = e.dst = env.rank;
  e.bytes = bytes;
  e.step = step;
  e.path = path;
  return events->append(e);
}

}  // namespace tide::exec
