#pragma once
// The simulator's executable form of a transfer plan: a DAG of tasks. A task
// is either a flow (bytes over a path of solver links, after a fixed
// latency) or a delay (a fixed time on a rank). Tasks may take and release a
// lock, which models a server that handles one request at a time: handed
// first-come to the next waiter, or taken by polling (a client that finds it
// held sleeps and tries again, so the lock can sit free).

#include <cstdint>
#include <string>
#include <vector>

#include "sim/flow_solver.h"

namespace tide::sim {

using TaskId = uint32_t;
// A task that is no unit of a plan's schedule (a join, a step, merged units).
inline constexpr uint32_t kNoUnit = 0xffffffffu;

enum class TaskPath : uint8_t {
  kCompute = 0,  // delay: post-processing, registration, control round trips
  kNvlink,
  kRdma,
  kNccl,
  kPcieH2D,
  kPcieD2H,
  kHostMem,
  kDisk,
};
const char* taskPathName(TaskPath p);

struct Task {
  bool isFlow = false;
  double bytes = 0;     // flow payload
  double seconds = 0;   // delay length, or a flow's latency before it starts
  uint32_t pathId = 0;  // index into WorkGraph::paths (flows)
  int32_t src = -1;     // ranks for the event record
  int32_t dst = -1;
  uint16_t stage = 0;  // index into WorkGraph::stageNames
  TaskPath kind = TaskPath::kCompute;
  int32_t acquire = -1;     // lock taken before the task starts
  int32_t release = -1;     // lock released when the task ends
  bool record = true;       // emit an event (joins do not)
  uint32_t unit = kNoUnit;  // the schedule's unit (engine/plan/schedule.h) it prices
  uint32_t piece = 0;       // and which of its pieces
  uint32_t pendingDeps = 0;
  std::vector<TaskId> succ;
};

class WorkGraph {
 public:
  uint16_t stageId(const std::string& name);
  uint32_t addPath(std::vector<LinkId> links);
  TaskId addFlow(uint32_t path, double bytes, double latency, int32_t src, int32_t dst,
                 uint16_t stage, TaskPath kind);
  TaskId addDelay(double seconds, int32_t rank, uint16_t stage);
  // A zero-time task that only joins dependencies.
  TaskId addJoin();
  void dep(TaskId before, TaskId after);
  // A lock that passes to its oldest waiter on release.
  int32_t addLock() { return addPolledLock(0, 0); }
  // A lock taken by polling: a task that finds it held sleeps, and tries
  // again some part of pollSeconds (> 0) after the next release (executor.h,
  // PollResidual); the time it sits free before a try takes it counts, on
  // the critical path, to stage `pollStage`.
  int32_t addPolledLock(double pollSeconds, uint16_t pollStage) {
    locks_.push_back({pollSeconds, pollStage});
    return static_cast<int32_t>(locks_.size() - 1);
  }
  struct LockSpec {
    double pollSeconds = 0;
    uint16_t pollStage = 0;
  };

  std::vector<Task>& tasks() { return tasks_; }
  const std::vector<Task>& tasks() const { return tasks_; }
  const std::vector<std::vector<LinkId>>& paths() const { return paths_; }
  const std::vector<std::string>& stageNames() const { return stageNames_; }
  const std::vector<LockSpec>& locks() const { return locks_; }

 private:
  std::vector<Task> tasks_;
  std::vector<std::vector<LinkId>> paths_;
  std::vector<std::string> stageNames_;
  std::vector<LockSpec> locks_;
};

}  // namespace tide::sim
