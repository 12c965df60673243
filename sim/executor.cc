#include "sim/executor.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <memory>
#include <queue>
#include <random>

#include "engine/core/clock.h"

namespace tide::sim {

namespace {

constexpr TaskId kNoTask = std::numeric_limits<TaskId>::max();
constexpr uint64_t kPollSeed = 1;  // any fixed seed: runs must repeat

enum class TimerKind : uint8_t {
  kEnd,        // a delay ends
  kStartFlow,  // a flow's latency has elapsed: the flow begins
  kRetry,      // a task polling a held lock tries again
};

struct Timer {
  double t;
  TaskId task;
  TimerKind kind;
  uint64_t seq;
  bool operator>(const Timer& o) const { return t != o.t ? t > o.t : seq > o.seq; }
};

class Runner {
 public:
  Runner(WorkGraph& g, FlowSolver& s, PollResidual residual, Progress progress,
         double progressSeconds)
      : g_(g),
        s_(s),
        residual_(std::move(residual)),
        locks_(g.locks().size()),
        progress_(std::move(progress)),
        progressSeconds_(progressSeconds) {
    starts_.assign(g.tasks().size(), 0.0);
    ends_.assign(g.tasks().size(), 0.0);
    enabler_.assign(g.tasks().size(), kNoTask);
  }

  Result<ExecResult> run() {
    Stopwatch wall;
    auto& tasks = g_.tasks();
    for (TaskId i = 0; i < tasks.size(); ++i) {
      if (tasks[i].pendingDeps == 0) ready(i, 0.0);
    }
    s_.resolve(0.0);
    double now = 0;
    double reported = 0;
    uint64_t events = 0;
    while (true) {
      // The clock is read once every few thousand events.
      if (progress_ && (++events & 4095) == 0 && wall.seconds() - reported >= progressSeconds_) {
        reported = wall.seconds();
        progress_(done_, tasks.size(), now);
      }
      double tt = timers_.empty() ? kNever : timers_.top().t;
      double tf = s_.nextCompletion();
      double t = std::min(tt, tf);
      if (t == kNever) break;
      now = t;
      while (!timers_.empty() && timers_.top().t <= now) {
        Timer tm = timers_.top();
        timers_.pop();
        switch (tm.kind) {
          case TimerKind::kStartFlow:
            startFlow(tm.task, now);
            break;
          case TimerKind::kRetry:
            ready(tm.task, now);
            break;
          case TimerKind::kEnd:
            complete(tm.task, now);
            break;
        }
      }
      for (FlowId f : s_.popCompleted(now)) complete(flowTask_[f], now);
      s_.resolve(now);
    }
    if (done_ != tasks.size()) {
      if (s_.activeFlows() > 0) {
        return TIDE_ERROR(Code::kFailedPrecondition,
                          "simulation stalled: a flow crosses a link of zero capacity");
      }
      return TIDE_ERROR(Code::kFailedPrecondition,
                        "simulation stalled: " + std::to_string(tasks.size() - done_) +
                            " tasks never became ready (dependency cycle or lock held)");
    }
    res_.makespan = now;
    res_.tasksRun = done_;
    res_.flows = flowTask_.size();
    res_.solves = s_.solves();
    res_.solvedFlows = s_.solvedFlows();
    buildStages();
    buildCriticalPath();
    res_.wallSeconds = wall.seconds();
    return std::move(res_);
  }

 private:
  void ready(TaskId id, double now) {
    Task& t = g_.tasks()[id];
    if (t.acquire >= 0) {
      Lock& l = locks_[t.acquire];
      if (l.held) {
        // A poller sleeps on; its next try is armed when the lock is released
        // (a lock never released then leaves no timer, and the stall shows).
        l.waiters.push_back(id);
        return;
      }
      l.held = true;
      // Taken on a poll after a release: the release is what it waited for.
      if (l.lastRelease != kNoTask &&
          (enabler_[id] == kNoTask || ends_[l.lastRelease] > ends_[enabler_[id]])) {
        enabler_[id] = l.lastRelease;
      }
    }
    begin(id, now);
  }

  void begin(TaskId id, double now) {
    Task& t = g_.tasks()[id];
    starts_[id] = now;
    if (t.isFlow) {
      if (t.seconds > 0) {
        timers_.push({now + t.seconds, id, TimerKind::kStartFlow, seq_++});
      } else {
        startFlow(id, now);
      }
    } else {
      timers_.push({now + t.seconds, id, TimerKind::kEnd, seq_++});
    }
  }

  void startFlow(TaskId id, double now) {
    Task& t = g_.tasks()[id];
    FlowId f = s_.start(g_.paths()[t.pathId], t.bytes, now);
    if (flowTask_.size() <= f) flowTask_.resize(f + 1);
    flowTask_[f] = id;
  }

  void complete(TaskId id, double now) {
    Task& t = g_.tasks()[id];
    ++done_;
    ends_[id] = now;
    last_ = id;
    if (t.record) {
      res_.events.push_back(
          {starts_[id], now, t.src, t.dst, t.bytes, t.stage, t.kind, t.unit, t.piece});
    }
    if (t.release >= 0) {
      Lock& l = locks_[t.release];
      l.held = false;
      l.lastRelease = id;
      if (double poll = g_.locks()[t.release].pollSeconds; poll > 0) {
        // Each sleeping poller tries again when its current sleep ends.
        for (TaskId w : l.waiters) {
          timers_.push({now + residual_() * poll, w, TimerKind::kRetry, seq_++});
        }
        l.waiters.clear();
      } else if (!l.waiters.empty()) {
        TaskId next = l.waiters.front();
        l.waiters.pop_front();
        l.held = true;
        enabler_[next] = id;
        begin(next, now);
      }
    }
    for (TaskId s : t.succ) {
      if (--g_.tasks()[s].pendingDeps == 0) {
        enabler_[s] = id;  // replaced by the lock's release if it must wait
        ready(s, now);
      }
    }
  }

  void buildStages() {
    const auto& names = g_.stageNames();
    res_.stages.resize(names.size());
    std::vector<std::vector<std::pair<double, double>>> spans(names.size());
    for (size_t i = 0; i < names.size(); ++i) {
      res_.stages[i].name = names[i];
      res_.stages[i].first = kNever;
    }
    for (const SimEvent& e : res_.events) {
      StageStats& s = res_.stages[e.stage];
      s.first = std::min(s.first, e.tStart);
      s.last = std::max(s.last, e.tEnd);
      s.bytes += e.bytes;
      ++s.tasks;
      spans[e.stage].push_back({e.tStart, e.tEnd});
    }
    for (size_t i = 0; i < names.size(); ++i) {
      auto& sp = spans[i];
      std::sort(sp.begin(), sp.end());
      double busy = 0, a = -1, b = -1;
      for (auto [s, e] : sp) {
        if (s > b) {
          if (b > a) busy += b - a;
          a = s;
          b = e;
        } else {
          b = std::max(b, e);
        }
      }
      if (b > a) busy += b - a;
      res_.stages[i].busy = busy;
      if (res_.stages[i].tasks == 0) res_.stages[i].first = 0;
    }
  }

  // Walks back from the last task through the tasks that made each ready.
  // A task begins when its enabler ends, except one that took a polled lock:
  // the time the lock sat free before its poll counts to the lock's stage,
  // so the chain still covers the makespan.
  void buildCriticalPath() {
    const auto& tasks = g_.tasks();
    for (TaskId id = last_; id != kNoTask; id = enabler_[id]) {
      const Task& t = tasks[id];
      res_.stages[t.stage].critical += ends_[id] - starts_[id];
      double wait = enabler_[id] == kNoTask ? 0 : starts_[id] - ends_[enabler_[id]];
      if (wait > 0 && t.acquire >= 0) {
        res_.stages[g_.locks()[t.acquire].pollStage].critical += wait;
      }
    }
  }

  struct Lock {
    bool held = false;
    std::deque<TaskId> waiters;  // in arrival order; a polled lock's sleepers
    TaskId lastRelease = kNoTask;
  };

  WorkGraph& g_;
  FlowSolver& s_;
  PollResidual residual_;
  std::vector<Lock> locks_;
  std::vector<double> starts_, ends_;
  std::vector<TaskId> enabler_;  // the task whose end made this one ready
  TaskId last_ = kNoTask;
  std::vector<TaskId> flowTask_;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers_;
  uint64_t seq_ = 0;
  uint64_t done_ = 0;
  Progress progress_;
  double progressSeconds_ = kProgressSeconds;
  ExecResult res_;
};

}  // namespace

Result<ExecResult> execute(WorkGraph& graph, FlowSolver& solver, PollResidual residual,
                           Progress progress, double progressSeconds) {
  if (!residual) {
    auto rng = std::make_shared<std::mt19937_64>(kPollSeed);
    residual = [rng] { return std::uniform_real_distribution<double>(0.0, 1.0)(*rng); };
  }
  return Runner(graph, solver, std::move(residual), std::move(progress), progressSeconds).run();
}

}  // namespace tide::sim
