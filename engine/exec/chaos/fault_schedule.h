#pragma once
// The faults of a soak run (`tide sync --chaos SEED`), drawn from the seed
// alone: the same seed and the same run shape give the same schedule, on
// any host and compiler (SplitMix64 and integer arithmetic, no
// implementation-defined <random> distributions). At most one fault hits an
// update. When inside the update a fault strikes is a fraction of the
// update's transfer time, which the driver measures while it runs, so the
// schedule is reproducible and the instant follows the host's speed.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/status.h"

namespace tide::exec {

enum class FaultKind : uint8_t {
  kKillRank,       // SIGKILL of a rank process mid-update; the driver restarts it
  kLinkBurst,      // packet loss and a rate cut on one node's link, for a bounded burst
  kSlowRank,       // SIGSTOP of a rank process, SIGCONT after a bounded time
  kStoreNodeLoss,  // a store node drops its segment mid-update (--strategy store)
};
inline constexpr FaultKind kAllFaultKinds[] = {FaultKind::kKillRank, FaultKind::kLinkBurst,
                                               FaultKind::kSlowRank, FaultKind::kStoreNodeLoss};

// "kill", "link", "slow", "store-node".
const char* faultKindName(FaultKind k);
Result<FaultKind> parseFaultKind(std::string_view name);
// A comma-separated list of names ("all": every kind).
Result<std::vector<FaultKind>> parseFaultKinds(std::string_view list);

struct Fault {
  int update = 0;  // the update attempt it hits, 1-based
  FaultKind kind = FaultKind::kKillRank;
  int target = -1;            // a rank (kill, slow) or a node (link, store-node)
  double at = 0;              // fraction of the update's transfer time after the pause
  double seconds = 0;         // link burst, slow rank: how long it lasts
  double lossPercent = 0;     // link burst
  double ratePercent = 100;   // link burst: the link's rate meanwhile, % of its own
  bool duringImport = false;  // store-node: while importing, else after the commit
  std::string toString() const;
};

// What a schedule may hit, and how hard.
struct ChaosSpace {
  int updates = 0;
  std::vector<int> ranks;     // every rank of the run (slow faults)
  std::vector<int> killable;  // the ranks kills may hit; empty: every rank
  int nodes = 0;              // emulated nodes (links)
  int storeNodes = 0;         // store nodes; 0: no store-node faults
  std::vector<FaultKind> kinds;
  double rate = 0.3;             // chance that an update gets a fault
  double maxBurstSeconds = 1.5;  // link bursts and slow ranks last at most this
  double maxLossPercent = 20;
  double minRatePercent = 10;
};

class FaultSchedule {
 public:
  static Result<FaultSchedule> generate(uint64_t seed, const ChaosSpace& space);

  uint64_t seed() const { return seed_; }
  const std::vector<Fault>& faults() const { return faults_; }
  // The fault of update attempt `update`, or nullptr.
  const Fault* forUpdate(int update) const;
  // The first store-node fault at or after attempt `update`, or nullptr.
  const Fault* nextStoreLoss(int update) const;
  std::map<FaultKind, int> counts() const;

 private:
  uint64_t seed_ = 0;
  std::vector<Fault> faults_;  // by update
  std::map<int, size_t> byUpdate_;
};

}  // namespace tide::exec
