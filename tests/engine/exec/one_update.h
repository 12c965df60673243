#pragma once
// Every rank of a plan as a thread over tcp on loopback: setup, then update
// 1, with a fault-injecting transport on one rank; each rank then reports
// which complete version its inference shard holds and which it serves.

#include <memory>
#include <thread>
#include <vector>

#include "engine/exec/rank/rank_executor.h"
#include "tests/engine/exec/plan_fixture.h"
#include "tests/fakes/faulty_transport.h"

namespace tide::exec {

struct UpdateOutcome {
  Status step = Status::ok();
  bool reader = false, onV0 = false, onV1 = false;
  ServedVersion served;
  uint64_t requestsAfterSetup = 0;  // the faulty rank's requests before update 1
};

inline std::vector<UpdateOutcome> oneUpdate(const PlanFixture& s,
                                            const workloads::SyntheticWeights& w,
                                            const ExecOptions& eo, int faultyRank,
                                            transport::fakes::FaultPlan fault) {
  auto layouts = orThrow(RankLayout::buildAll(s.plan));
  const int world = static_cast<int>(s.plan.ranks.size());
  MemoryStore store;
  std::vector<UpdateOutcome> out(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      transport::TransportConfig c;
      c.backend = "tcp";
      c.streams = 1;
      c.rank = r;
      c.worldSize = world;
      PrefixStore ts(store, "transport/");
      c.store = &ts;
      auto t = transport::createTransport(c);
      if (!t.isOk()) {
        out[r].step = t.status();
        return;
      }
      std::unique_ptr<transport::Transport> tr = std::move(*t);
      transport::fakes::FaultyTransport* faulty = nullptr;
      if (r == faultyRank) {
        faulty = new transport::fakes::FaultyTransport(std::move(tr), fault);
        tr.reset(faulty);
      }
      PrefixStore es(store, "exec/");
      auto ex = RankExecutor::create(s.plan, layouts, w, *tr, es, eo);
      if (!ex.isOk()) {
        out[r].step = ex.status();
        return;
      }
      if (faulty) out[r].requestsAfterSetup = faulty->requestsSeen();
      out[r].step = (*ex)->runStep(1, nullptr).status();
      out[r].reader = s.plan.ranks[r].role != plan::Role::kTrainer;
      out[r].onV0 = (*ex)->checkVersion(0).isOk();
      out[r].onV1 = (*ex)->checkVersion(1).isOk();
      out[r].served = (*ex)->serving();
      (void)storeBarrier(es, "test-end", world, 4 * eo.timeoutSeconds);
    });
  }
  for (auto& th : threads) th.join();
  return out;
}

}  // namespace tide::exec
