#include "engine/sync/p2p_rr_strategy.h"

#include "engine/sync/p2p_strategy.h"

namespace tide::sync {

Result<plan::TransferPlan> P2pRoundRobinStrategy::makePlan(const SyncProblem& problem) const {
  SyncProblem rr = problem;
  rr.options.assignment = plan::Assignment::kRoundRobin;
  TIDE_ASSIGN_OR_RETURN(plan::TransferPlan p, P2pStrategy().makePlan(rr));
  p.strategy = std::string(name());
  return p;
}

}  // namespace tide::sync
