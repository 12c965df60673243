#include "engine/exec/rank/sync_run.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <thread>

#include "engine/core/clock.h"
#include "engine/core/log.h"
#include "engine/exec/executor/rank_records.h"

namespace tide::exec {

namespace {

std::string timeKey(int step, int rank) {
  return "step" + std::to_string(step) + "/time/r" + std::to_string(rank);
}
std::string setupKey(int rank) {
  return "setup/work/r" + std::to_string(rank);
}
std::string eventsKey(int step, int rank) {
  return "step" + std::to_string(step) + "/events/r" + std::to_string(rank);
}

// Buffers one rank's events of a step; plain structs, same binary on every rank.
class VectorSink final : public traces::EventSink {
 public:
  Status append(const traces::Event& e) override {
    events.push_back(e);
    return Status::ok();
  }
  Status flush() override { return Status::ok(); }
  std::vector<traces::Event> events;
};

}  // namespace

Result<std::vector<StepStats>> runRank(const plan::TransferPlan& plan,
                                       const std::vector<RankLayout>& layouts,
                                       const workloads::SyntheticWeights& weights,
                                       transport::Transport& transport, Store& store,
                                       const RankRunOptions& options, traces::EventSink* events) {
  TIDE_ASSIGN_OR_RETURN(
      auto ex, RankExecutor::create(plan, layouts, weights, transport, store, options.exec));
  const int rank = transport.rank();
  const int world = transport.worldSize();
  const double timeout = options.exec.timeoutSeconds;
  if (options.setup) {
    const SetupWork& w = ex->setupWork();
    TIDE_RETURN_IF_ERROR(store.set(
        setupKey(rank), encodeSetup({w.registrations, w.registeredBytes, w.registerSeconds})));
    if (rank == 0) {
      options.setup->ranks.assign(world, SetupWork{});
      for (int r = 0; r < world; ++r) {
        TIDE_ASSIGN_OR_RETURN(std::string v, store.get(setupKey(r), timeout));
        auto rec = decodeSetup(v);
        if (!rec.isOk()) return rec.status().withContext("exec: rank " + std::to_string(r));
        options.setup->ranks[r] = {rec->registrations, rec->registeredBytes, rec->registerSeconds};
      }
    }
  }
  std::vector<StepStats> out;
  for (int step = 1; step <= options.steps; ++step) {
    VectorSink mine;
    traces::EventSink* sink = options.gatherEvents ? &mine : events;
    auto stepped = ex->runStep(step, sink);
    if (!stepped.isOk()) {
      if (options.failedAt) *options.failedAt = nowSeconds();
      return stepped.status();
    }
    RankStep rs = std::move(*stepped);
    const TimingRecord timing{.tStart = rs.tStart,
                              .tEnd = rs.tEnd,
                              .bytesSent = rs.bytesSent,
                              .bytesLocal = rs.bytesLocal,
                              .verifySeconds = rs.verifySeconds,
                              .bytesFull = rs.bytesFull,
                              .bytesRead = rs.bytesRead,
                              .elements = rs.elements,
                              .changed = rs.changed,
                              .bytesVerified = rs.bytesVerified,
                              .stageOutSeconds = rs.stageOutSeconds,
                              .stageInSeconds = rs.stageInSeconds};
    TIDE_RETURN_IF_ERROR(store.set(timeKey(step, rank), encodeTiming(timing)));
    if (options.gatherEvents && rank != 0) {
      TIDE_RETURN_IF_ERROR(store.set(eventsKey(step, rank), encodeEvents(mine.events)));
    }
    StepStats st;
    st.step = step;
    if (rank != 0) {
      st.seconds = rs.tEnd - rs.tStart;
      st.verifySeconds = rs.verifySeconds;
      st.stageOutSeconds = rs.stageOutSeconds;
      st.stageInSeconds = rs.stageInSeconds;
      st.bytes = rs.bytesSent;
      st.localBytes = rs.bytesLocal;
      st.fullBytes = rs.bytesFull;
      st.bytesRead = rs.bytesRead;
      st.elements = rs.elements;
      st.changed = rs.changed;
      st.verifiedBytes = rs.bytesVerified;
      out.push_back(st);
      continue;
    }
    double t0 = 1e300, t1 = -1e300;
    for (int r = 0; r < world; ++r) {
      TIDE_ASSIGN_OR_RETURN(std::string v, store.get(timeKey(step, r), timeout));
      auto rec = decodeTiming(v);
      if (!rec.isOk()) {
        return rec.status().withContext("exec: rank " + std::to_string(r));
      }
      t0 = std::min(t0, rec->tStart);
      t1 = std::max(t1, rec->tEnd);
      st.bytes += rec->bytesSent;
      st.localBytes += rec->bytesLocal;
      st.fullBytes += rec->bytesFull;
      st.bytesRead += rec->bytesRead;
      st.elements += rec->elements;
      st.changed += rec->changed;
      st.verifiedBytes += rec->bytesVerified;
      st.verifySeconds = std::max(st.verifySeconds, rec->verifySeconds);
      st.stageOutSeconds = std::max(st.stageOutSeconds, rec->stageOutSeconds);
      st.stageInSeconds = std::max(st.stageInSeconds, rec->stageInSeconds);
    }
    st.seconds = t1 - t0;
    if (options.gatherEvents && events) {
      for (const auto& e : mine.events) TIDE_RETURN_IF_ERROR(events->append(e));
      for (int r = 1; r < world; ++r) {
        TIDE_ASSIGN_OR_RETURN(std::string v, store.get(eventsKey(step, r), timeout));
        auto evs = decodeEvents(v);
        if (!evs.isOk()) {
          return evs.status().withContext("exec: rank " + std::to_string(r));
        }
        for (const auto& e : *evs) TIDE_RETURN_IF_ERROR(events->append(e));
      }
    }
    out.push_back(st);
  }
  // Nobody tears down its regions while a peer may still read the store.
  TIDE_RETURN_IF_ERROR(storeBarrier(store, "finished", world, timeout));
  if (!storeDepart(store, "finished", rank, world, timeout)) {
    TIDE_LOG_WARN("rank 0: not every rank confirmed the end of the run within {} s", timeout);
  }
  return out;
}

Result<std::vector<StepStats>> runThreads(const plan::TransferPlan& plan,
                                          const workloads::SyntheticWeights& weights,
                                          transport::TransportConfig config,
                                          const RankRunOptions& options,
                                          traces::EventSink* events) {
  TIDE_ASSIGN_OR_RETURN(auto layouts, RankLayout::buildAll(plan));
  const int world = static_cast<int>(plan.ranks.size());
  MemoryStore store;
  std::vector<Status> status(world, Status::ok());
  std::vector<double> failedAt(world, 0);  // nowSeconds(), to tell the cause
  std::vector<std::vector<StepStats>> stats(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      transport::TransportConfig c = config;
      c.rank = r;
      c.worldSize = world;
      PrefixStore transportStore(store, "transport/");
      c.store = &transportStore;
      auto t = transport::createTransport(c);
      if (!t.isOk()) {
        status[r] = t.status();
        failedAt[r] = nowSeconds();
        return;
      }
      std::unique_ptr<transport::Transport> tr = std::move(*t);
      if (options.wrapTransport) tr = options.wrapTransport(std::move(tr), r);
      PrefixStore execStore(store, "exec/");
      RankRunOptions o = options;
      o.gatherEvents = false;  // one process: every rank appends to the shared sink
      o.failedAt = &failedAt[r];
      auto res = runRank(plan, layouts, weights, *tr, execStore, o, events);
      if (res.isOk()) {
        stats[r] = std::move(*res);
      } else {
        status[r] = res.status().withContext("rank " + std::to_string(r));
        if (failedAt[r] == 0) failedAt[r] = nowSeconds();
      }
    });
  }
  for (auto& th : threads) th.join();
  // The error a rank found itself beats the timeouts and lost peers it
  // caused in others (a rank that fails leaves, closing its connections);
  // among those, the earliest is the cause: a peer's write rejected because
  // the failed rank already dropped its regions comes after it.
  auto consequence = [](Code c) { return c == Code::kTimeout || c == Code::kUnavailable; };
  int cause = -1;
  for (int pass = 0; pass < 2 && cause < 0; ++pass) {
    for (int r = 0; r < world; ++r) {
      if (status[r].isOk() || (pass == 0 && consequence(status[r].code()))) continue;
      if (cause < 0 || failedAt[r] < failedAt[cause]) cause = r;
    }
  }
  if (cause < 0) return stats[0];
  // One error line for the user; TIDE_LOG=info shows what the others hit.
  for (int r = 0; r < world; ++r) {
    if (r != cause && !status[r].isOk()) TIDE_LOG_INFO("also failed: {}", status[r].toString());
  }
  return status[cause];
}

}  // namespace tide::exec
