#pragma once
// A fault in force until its owner ends it. The destructor ends it too, so
// an injected fault is removed on every path out of the code that started
// it (an error, an early return, Ctrl-C unwinding the driver). A killed
// rank needs no guard: its undoing is the restart; a lost store node is an
// option of the store path.

#include <memory>

#include "engine/core/status.h"
#include "engine/exec/chaos/fault_schedule.h"
#include "engine/exec/launch/emulated_cluster.h"
#include "engine/exec/launch/rank_process.h"

namespace tide::exec {

class InjectedFault {
 public:
  virtual ~InjectedFault() = default;
  virtual FaultKind kind() const = 0;
  // Removes the fault; later calls do nothing.
  virtual Status end() = 0;
};

// Packet loss and a rate cut on one node's link (both directions).
class LinkBurst final : public InjectedFault {
 public:
  static Result<std::unique_ptr<LinkBurst>> start(EmulatedCluster& cluster, int node,
                                                  double lossPercent, double rateFraction);
  ~LinkBurst() override { (void)end(); }
  FaultKind kind() const override { return FaultKind::kLinkBurst; }
  Status end() override;

 private:
  LinkBurst(EmulatedCluster& cluster, int node) : cluster_(cluster), node_(node) {}
  EmulatedCluster& cluster_;
  int node_;
  bool active_ = true;
};

// A rank process held with SIGSTOP until end() sends SIGCONT. The process
// must outlive this (the driver ends its faults before it restarts a rank).
class PausedRank final : public InjectedFault {
 public:
  static Result<std::unique_ptr<PausedRank>> start(RankProcess& process);
  ~PausedRank() override { (void)end(); }
  FaultKind kind() const override { return FaultKind::kSlowRank; }
  Status end() override;

 private:
  explicit PausedRank(RankProcess& process) : process_(process) {}
  RankProcess& process_;
  bool active_ = true;
};

}  // namespace tide::exec
