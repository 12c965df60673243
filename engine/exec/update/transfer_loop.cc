#include "engine/exec/update/transfer_loop.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include "engine/core/clock.h"
#include "engine/exec/executor/shard_home.h"
#include "engine/exec/update/update_options.h"

namespace tide::exec {

using plan::Space;

namespace {

constexpr uint64_t kAllStaged = ShardHome::kAllStaged;

// The end of the training-buffer bytes a group or local task reads (0: none).
uint64_t trainEnd(const OutGroup& g) {
  uint64_t end = 0;
  if (g.srcSpace != Space::kTrain) return end;
  for (const Run& r : g.runs) end = std::max(end, r.srcOffset + r.bytes);
  return end;
}
uint64_t trainEnd(const LocalTask& t) {
  uint64_t end = 0;
  if (t.srcSpace != Space::kTrain) return end;
  for (const Run& r : t.runs) end = std::max(end, r.srcOffset + r.bytes);
  for (const Quantize& q : t.quantize) end = std::max(end, q.src->offset + q.src->bytes);
  return end;
}

}  // namespace

Status runTransferLoop(const UpdateEnv& env, UpdateHost& host, GroupIo& io, int step,
                       traces::EventSink* events, RankStep& out) {
  const RankSchedule& s = env.schedule;
  const plan::TransferPlan& tp = env.plan;
  const ExecOptions& opt = env.options;
  transport::Transport& net = env.transport;
  const int rank = env.rank;
  const double epoch = host.epoch();
  const auto buffers = host.buffers();
  auto now = [] { return nowSeconds(); };
  std::vector<uint64_t> wire(s.out.size(), 0);  // bytes each group put on the wire
  // When a unit may run is the schedule's (engine/plan/schedule.h): its
  // gates, counted down here as what counts to them lands at this rank,
  // and for a hop's piece the same piece of the hop into this rank.
  const plan::Schedule& sched = *s.units;
  std::vector<uint32_t> gateLeft(sched.gates.size(), 0);
  for (size_t g = 0; g < sched.gates.size(); ++g) {
    if (sched.gates[g].rank == s.rank) gateLeft[g] = sched.gates[g].pieces;
  }
  std::vector<char> started(s.out.size(), 0), done(s.local.size(), 0), arrived(s.in.size(), 0);
  auto depsMet = [&](uint32_t id, uint32_t piece) {
    const plan::Unit& u = sched.units[id];
    for (auto* d = sched.depsBegin(u); d != sched.depsEnd(u); ++d) {
      if (d->kind == plan::DepKind::kGate) {
        if (gateLeft[d->id] > 0) return false;
      } else if (!arrived[sched.units[d->id].slot + piece]) {
        return false;
      }
    }
    return true;
  };
  auto landed = [&](uint32_t id) {
    for (const uint32_t g : sched.units[id].gates) {
      if (g != plan::kNoGate) --gateLeft[g];
    }
  };
  // A trainer whose shard lands from device memory while the transfer runs
  // (bucketed staging) sends a group, or runs a local task, once the
  // training bytes it reads have landed.
  std::vector<uint64_t> outNeeds, localNeeds;
  for (const OutGroup& g : s.out) outNeeds.push_back(trainEnd(g));
  for (const LocalTask& t : s.local) localNeeds.push_back(trainEnd(t));
  uint64_t staged = 0;  // host.trainReady(), as last seen
  // One event per unit (piece) run: what `tide validate` compares unit by
  // unit with the simulator, and what a timeline shows.
  auto emit = [&](double t0, double t1, int src, int dst, uint64_t bytes, uint32_t stage,
                  traces::EventPath path, uint32_t unit, uint32_t piece) -> Status {
    if (!events) return Status::ok();
    traces::Event e;
    e.tStart = t0 - epoch;
    e.tEnd = t1 - epoch;
    e.src = src;
    e.dst = dst;
    e.bytes = bytes;
    e.stage = static_cast<int32_t>(stage);
    e.step = step;
    e.path = path;
    e.unit = static_cast<int32_t>(unit);
    e.piece = piece;
    return events->append(e);
  };

  struct Flight {
    size_t group;
    transport::BatchId id;
    double t0;
  };
  std::vector<Flight> flights;
  // An early return (a failed check, a timeout) must not leave our batches
  // reading buffers that are freed next (asan: use-after-free in a tcp send).
  struct DrainFlights {
    transport::Transport& transport;
    std::vector<Flight>& flights;
    double timeoutSeconds;
    ~DrainFlights() {
      for (const Flight& f : flights) (void)transport.wait(f.id, timeoutSeconds);
    }
  } drain{net, flights, opt.timeoutSeconds};
  size_t leftOut = s.out.size(), leftLocal = s.local.size(), leftIn = s.in.size();
  size_t firstOut = 0, firstLocal = 0;  // everything before these has started / run
  std::vector<transport::Request> reqs;
  bool dirty = true;
  double lastProgress = now();
  // How long an idle round blocks: doubled while nothing moves (up to 2 ms),
  // so that many ranks on few cores leave the CPU to the threads that move
  // bytes; an arrival still wakes the wait at once.
  double idleWait = 0.0002;

  while (leftOut > 0 || leftLocal > 0 || leftIn > 0) {
    bool progress = false;
    if (staged != kAllStaged) {
      TIDE_ASSIGN_OR_RETURN(const uint64_t r, host.trainReady());
      if (r > staged) {
        staged = r;
        dirty = progress = true;
      }
    }
    if (dirty) {
      dirty = false;
      for (size_t i = firstLocal; i < s.local.size(); ++i) {
        const LocalTask& t = s.local[i];
        if (done[i] || !depsMet(t.id, 0) || localNeeds[i] > staged) continue;
        const double t0 = now();
        const uint8_t* src = buffers[static_cast<int>(t.srcSpace)];
        uint8_t* dst = buffers[static_cast<int>(t.dstSpace)];
        TIDE_RETURN_IF_ERROR(t.run(tp, src, dst));
        done[i] = 1;
        --leftLocal;
        out.bytesLocal += t.bytes;
        landed(t.id);
        TIDE_RETURN_IF_ERROR(
            emit(t0, now(), rank, rank, t.bytes, t.stage, traces::EventPath::kHostMem, t.id, 0));
        dirty = progress = true;
      }
      while (firstLocal < s.local.size() && done[firstLocal]) ++firstLocal;
      for (size_t i = firstOut; i < s.out.size(); ++i) {
        const OutGroup& g = s.out[i];
        if (started[i] || !depsMet(g.id, g.piece) || outNeeds[i] > staged) continue;
        if (g.runs.empty()) {
          return TIDE_ERROR(Code::kInternal, "exec: empty transfer group");
        }
        reqs.clear();
        TIDE_RETURN_IF_ERROR(io.requests(i, step, reqs));
        for (const auto& q : reqs) wire[i] += q.length;
        // The immediate comes last: requests to one peer land in order.
        reqs.back().op = transport::Op::kWriteWithImm;
        reqs.back().imm = g.unit;
        const double t0 = now();
        auto id = net.submit(reqs);
        if (!id.isOk()) {
          return id.status().withContext("exec: rank " + std::to_string(rank) + " -> " +
                                         std::to_string(g.peer) + " stage " +
                                         tp.stages[g.stage].name);
        }
        flights.push_back(Flight{i, *id, t0});
        started[i] = 1;
        progress = true;
      }
      while (firstOut < s.out.size() && started[firstOut]) ++firstOut;
    }
    auto finish = [&](size_t k) -> Status {
      const OutGroup& g = s.out[flights[k].group];
      const uint64_t bytes = wire[flights[k].group];
      TIDE_RETURN_IF_ERROR(
          emit(flights[k].t0, now(), rank, g.peer, bytes, g.stage, env.path, g.id, g.piece));
      out.bytesSent += bytes;
      --leftOut;
      flights[k] = flights.back();
      flights.pop_back();
      return Status::ok();
    };
    auto failed = [&](size_t k, const Status& st) {
      const OutGroup& g = s.out[flights[k].group];
      return st.withContext("exec: write rank " + std::to_string(rank) + " -> " +
                            std::to_string(g.peer) + " (stage " + tp.stages[g.stage].name +
                            ", bucket " + std::to_string(g.bucket) + ")");
    };
    for (size_t k = 0; k < flights.size();) {
      auto r = net.test(flights[k].id);
      if (!r.isOk()) return failed(k, r.status());
      if (!*r) {
        ++k;
        continue;
      }
      TIDE_RETURN_IF_ERROR(finish(k));
      progress = true;
    }
    // Arrivals: block briefly only when nothing else moved.
    const bool staging = staged != kAllStaged;
    double wait = progress ? 0.0 : (flights.empty() && leftIn > 0 && !staging ? 0.005 : idleWait);
    while (leftIn > 0) {
      auto n = net.waitNotification(wait);
      if (!n.isOk()) {
        if (n.status().code() == Code::kTimeout) break;
        return n.status().withContext("exec: rank " + std::to_string(rank) + " waiting");
      }
      wait = 0;
      if (n->imm >= s.in.size() || arrived[n->imm] || s.in[n->imm].src != n->peer) {
        return TIDE_ERROR(Code::kDataLoss,
                          "exec: rank " + std::to_string(rank) + " got an unexpected immediate " +
                              std::to_string(n->imm) + " from rank " + std::to_string(n->peer));
      }
      const InUnit& u = s.in[n->imm];
      TIDE_RETURN_IF_ERROR(io.arrived(n->imm));
      arrived[n->imm] = 1;
      --leftIn;
      landed(u.id);
      dirty = progress = true;
    }
    if (!flights.empty() && !progress && leftIn == 0) {
      // Only our own batches remain: let the transport finish them (a
      // finished batch is forgotten by wait(), so it is complete here).
      Status w = net.wait(flights.front().id, std::max(idleWait, 0.0005));
      if (w.isOk()) {
        TIDE_RETURN_IF_ERROR(finish(0));
        progress = true;
      } else if (w.code() != Code::kTimeout) {
        return failed(0, w);
      }
    }
    if (staging && !progress && flights.empty() && leftIn == 0) {
      // Only the staging copy can move: look again shortly.
      std::this_thread::sleep_for(std::chrono::duration<double>(idleWait));
    }
    const double t = now();
    idleWait = progress ? 0.0002 : std::min(2 * idleWait, 0.002);
    if (progress) {
      lastProgress = t;
    } else if (opt.aborted && opt.aborted()) {
      return TIDE_ERROR(Code::kCancelled, "exec: rank " + std::to_string(rank) +
                                              ": the update was aborted while it waited");
    } else if (t - lastProgress > opt.timeoutSeconds) {
      std::string what;
      for (size_t i = 0; i < s.in.size(); ++i) {
        if (!arrived[i]) {
          what = "; first missing: stage " + tp.stages[s.in[i].stage].name + " bucket " +
                 std::to_string(s.in[i].bucket) + " from rank " + std::to_string(s.in[i].src);
          break;
        }
      }
      if (staging) what += "; training shard staged below byte " + std::to_string(staged);
      return TIDE_ERROR(Code::kTimeout,
                        "exec: rank " + std::to_string(rank) + " made no progress for " +
                            std::to_string(opt.timeoutSeconds) + " s (" +
                            std::to_string(flights.size()) + " batches in flight, " +
                            std::to_string(leftIn) + " arrivals and " + std::to_string(leftLocal) +
                            " local tasks pending" + what + ")");
    }
  }
  return Status::ok();
}

}  // namespace tide::exec
