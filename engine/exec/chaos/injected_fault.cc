#include "engine/exec/chaos/injected_fault.h"

#include <signal.h>

namespace tide::exec {

Result<std::unique_ptr<LinkBurst>> LinkBurst::start(EmulatedCluster& cluster, int node,
                                                    double lossPercent, double rateFraction) {
  std::unique_ptr<LinkBurst> b(new LinkBurst(cluster, node));
  // Half-applied (one end changed, the other failed) is removed by b's destructor.
  TIDE_RETURN_IF_ERROR(cluster.impairLink(node, lossPercent, rateFraction));
  return b;
}

Status LinkBurst::end() {
  if (!active_) return Status::ok();
  active_ = false;
  return cluster_.restoreLink(node_);
}

Result<std::unique_ptr<PausedRank>> PausedRank::start(RankProcess& process) {
  std::unique_ptr<PausedRank> p(new PausedRank(process));
  TIDE_RETURN_IF_ERROR(process.signal(SIGSTOP));
  return p;
}

Status PausedRank::end() {
  if (!active_) return Status::ok();
  active_ = false;
  return process_.signal(SIGCONT);
}

}  // namespace tide::exec
