#pragma once
// The soak driver (`tide sync --chaos SEED`): starts every rank as a
// long-lived process, runs N updates through them (chaos_protocol.h),
// injects the schedule's faults during the updates, and checks after each
// one what every inference rank serves (chaos_report.h has the invariants).
//
// Recovery model. An update is all or nothing: ranks receive into the
// version switch's shadow copy (or the store's staging copy) and commit
// only when the driver, having seen every rank verify the update, says so.
// When a rank fails, dies or the update runs out of time, the driver
// abandons the update: every rank keeps serving the previous version, the
// epoch's abort key releases the ranks still waiting, dead ranks are
// started again (a new process for the same rank, which loads the
// committed version from its checkpoint), and every rank builds a new
// transport and executor (a new epoch) in the same process, keeping the
// shard it serves. The abandoned update is retried as the next one. Every
// wait is bounded: a rank's by its --timeout, the driver's per update by
// twice that plus a margin, past which the update counts as a hang and the
// ranks that did not answer are killed and restarted.

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/exec/chaos/chaos_report.h"
#include "engine/exec/chaos/fault_schedule.h"
#include "engine/exec/executor/rank_layout.h"
#include "engine/exec/launch/emulated_cluster.h"
#include "engine/plan/transfer_plan.h"
#include "workloads/weights.h"

namespace tide::exec {

struct ChaosDriverOptions {
  int updates = 0;
  double timeoutSeconds = 30;  // the ranks' own bound on a wait
  int reportEvery = 100;
  std::vector<std::string> workerArgv;     // one rank: `tide sync ... --worker --chaos ...`
  std::map<std::string, std::string> env;  // added to every rank's environment
  std::string masterAddr = "127.0.0.1";    // where the rendezvous store listens
  const std::atomic<bool>* interrupted = nullptr;
  std::function<void(const ChaosWindow&)> onWindow;  // progress, as each window closes
  std::function<void(const std::string&)> onEvent;   // one line per notable event
};

class ChaosDriver {
 public:
  // Everything must outlive the driver; `cluster` may be null (no link faults).
  ChaosDriver(const plan::TransferPlan& plan, const std::vector<RankLayout>& layouts,
              const workloads::SyntheticWeights& weights, const FaultSchedule& schedule,
              EmulatedCluster* cluster, ChaosDriverOptions options);
  ~ChaosDriver();
  ChaosDriver(const ChaosDriver&) = delete;
  ChaosDriver& operator=(const ChaosDriver&) = delete;

  // An error only when the run could not go on (the ranks could not be
  // started, an epoch could not be built); broken invariants are in the result.
  Result<ChaosResult> run();

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace tide::exec
