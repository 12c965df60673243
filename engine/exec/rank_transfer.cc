// RankExecutor::transfer: one rank's share of a full or sparse update, run
// as an event loop over its outgoing batches, local tasks and arrivals (the
// rest of RankExecutor is in rank_executor.cc).

#include <algorithm>
#include <string>
#include <unordered_map>

#include "engine/exec/rank_executor.h"

namespace tide::exec {

using plan::Space;

namespace {

uint64_t sbKey(uint32_t stage, uint32_t bucket) {
  return (static_cast<uint64_t>(stage) << 32) | bucket;
}

}  // namespace

Status RankExecutor::transfer(int step, traces::EventSink* events, RankStep& out) {
  if (disk_) return transferDisk(step, events, out);
  if (storePath_) return transferStore(step, events, out);
  const RankSchedule& s = schedule_;
  const auto buffers = bufferArray();
  std::vector<uint64_t> wire(s.out.size(), 0);  // bytes each group put on the wire
  if (sparse_) (void)sparse_->takeCounters();   // a failed step's counts do not carry over
  // Outstanding work this rank receives or does locally, per (stage, bucket) and per stage.
  std::unordered_map<uint64_t, int64_t> pending;
  std::vector<int64_t> stagePending(plan_.stages.size(), 0);
  std::unordered_map<uint64_t, std::vector<char>> hopArrived;  // (stage, bucket) -> per chunk
  for (const auto& u : s.in) {
    ++pending[sbKey(u.stage, u.bucket)];
    ++stagePending[u.stage];
    if (u.hop) {
      auto& v = hopArrived[sbKey(u.stage, u.bucket)];
      if (v.size() <= u.chunk) v.resize(u.chunk + 1, 0);
    }
  }
  for (const auto& t : s.local) {
    ++pending[sbKey(t.stage, t.bucket)];
    ++stagePending[t.stage];
  }
  auto depsMet = [&](uint32_t stage, uint32_t bucket) {
    for (const auto& d : plan_.stages[stage].deps) {
      if (d.perBucket) {
        auto it = pending.find(sbKey(d.stage, bucket));
        if (it != pending.end() && it->second > 0) return false;
      } else if (stagePending[d.stage] > 0) {
        return false;
      }
    }
    return true;
  };
  auto landed = [&](uint32_t stage, uint32_t bucket) {
    --pending[sbKey(stage, bucket)];
    --stagePending[stage];
  };
  auto emit = [&](double t0, double t1, int src, int dst, uint64_t bytes, uint32_t stage,
                  traces::EventPath path) -> Status {
    if (!events) return Status::ok();
    traces::Event e;
    e.tStart = t0 - epoch_;
    e.tEnd = t1 - epoch_;
    e.src = src;
    e.dst = dst;
    e.bytes = bytes;
    e.stage = static_cast<int32_t>(stage);
    e.step = step;
    e.path = path;
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
  } drain{transport_, flights, options_.timeoutSeconds};
  std::vector<char> started(s.out.size(), 0), done(s.local.size(), 0), arrived(s.in.size(), 0);
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
    if (dirty) {
      dirty = false;
      for (size_t i = firstLocal; i < s.local.size(); ++i) {
        const LocalTask& t = s.local[i];
        if (done[i] || !depsMet(t.stage, t.bucket)) continue;
        const double t0 = now();
        const uint8_t* src = buffer(t.srcSpace);
        uint8_t* dst = buffer(t.dstSpace);
        TIDE_RETURN_IF_ERROR(t.run(plan_, src, dst));
        done[i] = 1;
        --leftLocal;
        out.bytesLocal += t.bytes;
        landed(t.stage, t.bucket);
        TIDE_RETURN_IF_ERROR(
            emit(t0, now(), rank_, rank_, t.bytes, t.stage, traces::EventPath::kHostMem));
        dirty = progress = true;
      }
      while (firstLocal < s.local.size() && done[firstLocal]) ++firstLocal;
      for (size_t i = firstOut; i < s.out.size(); ++i) {
        const OutGroup& g = s.out[i];
        if (started[i] || !depsMet(g.stage, g.bucket)) continue;
        if (g.hop) {
          auto it = hopArrived.find(sbKey(g.stage, g.bucket));
          if (it != hopArrived.end() && !it->second[g.chunk]) continue;
        }
        if (g.runs.empty()) {
          return TIDE_ERROR(Code::kInternal, "exec: empty transfer group");
        }
        reqs.clear();
        if (sparse_) {
          // One delta block of the whole group instead of its bytes.
          TIDE_ASSIGN_OR_RETURN(auto q, sparse_->encode(i, buffers));
          reqs.push_back(q);
        } else {
          for (const Run& r : g.runs) {
            transport::Request q;
            q.op = transport::Op::kWrite;
            q.localRegion = localIds_[static_cast<int>(g.srcSpace)];
            q.localOffset = r.srcOffset;
            q.peer = g.peer;
            q.remoteRegion = remoteIds_[g.peer][static_cast<int>(g.dstSpace)];
            // Switch: odd versions land in the peer's second copy
            // (counted from the start version: a resumed run's live copy is its first.)
            if (!remoteShadowIds_.empty() && g.dstSpace == Space::kInfer &&
                (step - options_.startVersion) % 2 == 1) {
              q.remoteRegion = remoteShadowIds_[g.peer];
            }
            q.remoteOffset = r.dstOffset;
            q.length = r.bytes;
            reqs.push_back(q);
          }
        }
        for (const auto& q : reqs) wire[i] += q.length;
        // The immediate comes last: requests to one peer land in order.
        reqs.back().op = transport::Op::kWriteWithImm;
        reqs.back().imm = g.unit;
        const double t0 = now();
        auto id = transport_.submit(reqs);
        if (!id.isOk()) {
          return id.status().withContext("exec: rank " + std::to_string(rank_) + " -> " +
                                         std::to_string(g.peer) + " stage " +
                                         plan_.stages[g.stage].name);
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
      TIDE_RETURN_IF_ERROR(emit(flights[k].t0, now(), rank_, g.peer, bytes, g.stage, path_));
      out.bytesSent += bytes;
      --leftOut;
      flights[k] = flights.back();
      flights.pop_back();
      return Status::ok();
    };
    auto failed = [&](size_t k, const Status& st) {
      const OutGroup& g = s.out[flights[k].group];
      return st.withContext("exec: write rank " + std::to_string(rank_) + " -> " +
                            std::to_string(g.peer) + " (stage " + plan_.stages[g.stage].name +
                            ", bucket " + std::to_string(g.bucket) + ")");
    };
    for (size_t k = 0; k < flights.size();) {
      auto r = transport_.test(flights[k].id);
      if (!r.isOk()) return failed(k, r.status());
      if (!*r) {
        ++k;
        continue;
      }
      TIDE_RETURN_IF_ERROR(finish(k));
      progress = true;
    }
    // Arrivals: block briefly only when nothing else moved.
    double wait = progress ? 0.0 : (flights.empty() && leftIn > 0 ? 0.005 : idleWait);
    while (leftIn > 0) {
      auto n = transport_.waitNotification(wait);
      if (!n.isOk()) {
        if (n.status().code() == Code::kTimeout) break;
        return n.status().withContext("exec: rank " + std::to_string(rank_) + " waiting");
      }
      wait = 0;
      if (n->imm >= s.in.size() || arrived[n->imm] || s.in[n->imm].src != n->peer) {
        return TIDE_ERROR(Code::kDataLoss,
                          "exec: rank " + std::to_string(rank_) + " got an unexpected immediate " +
                              std::to_string(n->imm) + " from rank " + std::to_string(n->peer));
      }
      const InUnit& u = s.in[n->imm];
      if (sparse_) TIDE_RETURN_IF_ERROR(sparse_->check(n->imm, buffers));
      arrived[n->imm] = 1;
      --leftIn;
      landed(u.stage, u.bucket);
      if (u.hop) hopArrived[sbKey(u.stage, u.bucket)][u.chunk] = 1;
      dirty = progress = true;
    }
    if (!flights.empty() && !progress && leftIn == 0) {
      // Only our own batches remain: let the transport finish them (a
      // finished batch is forgotten by wait(), so it is complete here).
      Status w = transport_.wait(flights.front().id, std::max(idleWait, 0.0005));
      if (w.isOk()) {
        TIDE_RETURN_IF_ERROR(finish(0));
        progress = true;
      } else if (w.code() != Code::kTimeout) {
        return failed(0, w);
      }
    }
    const double t = now();
    idleWait = progress ? 0.0002 : std::min(2 * idleWait, 0.002);
    if (progress) {
      lastProgress = t;
    } else if (options_.aborted && options_.aborted()) {
      return TIDE_ERROR(Code::kCancelled, "exec: rank " + std::to_string(rank_) +
                                              ": the update was aborted while it waited");
    } else if (t - lastProgress > options_.timeoutSeconds) {
      std::string what;
      for (size_t i = 0; i < s.in.size(); ++i) {
        if (!arrived[i]) {
          what = "; first missing: stage " + plan_.stages[s.in[i].stage].name + " bucket " +
                 std::to_string(s.in[i].bucket) + " from rank " + std::to_string(s.in[i].src);
          break;
        }
      }
      return TIDE_ERROR(Code::kTimeout,
                        "exec: rank " + std::to_string(rank_) + " made no progress for " +
                            std::to_string(options_.timeoutSeconds) + " s (" +
                            std::to_string(flights.size()) + " batches in flight, " +
                            std::to_string(leftIn) + " arrivals and " + std::to_string(leftLocal) +
                            " local tasks pending" + what + ")");
    }
  }
  if (sparse_) {
    TIDE_RETURN_IF_ERROR(sparse_->applyAll(buffers));
    const SparseCounters c = sparse_->takeCounters();
    out.bytesFull = c.fullBytes;
    out.elements = c.elements;
    out.changed = c.changed;
  } else {
    out.bytesFull = out.bytesSent;
  }
  return Status::ok();
}

}  // namespace tide::exec
