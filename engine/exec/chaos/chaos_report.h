#pragma once
// What a soak run measured, per window of updates and in total, and the
// invariants it checks at the end (chaos_driver.h):
//
//   * every inference rank, after every update, serves exactly the new
//     version (the update committed) or the previous one (abandoned), and
//     its shard's digest equals that version's, computed from the generator
//     by the driver (never torn, never mixed);
//   * emulated generation never read a torn shard;
//   * no update ran past its bound (hangs);
//   * the processes that lived through the run (the driver and every rank
//     that was never restarted) hold no more file descriptors at the end
//     than after the first window, and their resident memory grew by no
//     more than the allowance below.

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/exec/chaos/fault_schedule.h"

namespace tide::exec {

struct ProcessRecord {
  int rank = -1;  // -1: the driver
  pid_t pid = 0;
  bool original = true;  // started with the run, never restarted
  int fds = 0;
  uint64_t rssBytes = 0;
  int threads = 0;
};

struct ChaosWindow {
  int firstUpdate = 0, lastUpdate = 0;
  int updates = 0;
  int committed = 0;                  // ended on the new version everywhere
  int abandoned = 0;                  // ended on the previous version everywhere
  std::map<FaultKind, int> injected;  // faults that struck during an update
  std::map<FaultKind, int> missed;    // scheduled, but the update ended before their moment
  int checked = 0;                    // inference-rank states compared with the generator
  int matched = 0;                    // ... equal to the version they must be
  int mismatched = 0;                 // ... torn, mixed, or the wrong version
  uint64_t generationReads = 0, tornReads = 0;
  int hangs = 0;     // updates past their bound
  int restarts = 0;  // rank processes started again
  int reloads = 0;   // inference ranks that loaded a version from their checkpoint
  int epochs = 0;    // transports and executors rebuilt
  std::vector<double> updateSeconds;
  std::vector<ProcessRecord> processes;  // sampled at the window's end

  void add(const ChaosWindow& o);  // counts and times; not the samples
  double medianSeconds() const;
  double maxSeconds() const;
};

struct ChaosResult {
  std::vector<ChaosWindow> windows;
  ChaosWindow total;
  std::vector<ProcessRecord> start;  // after the first epoch, before any update
  int finalVersion = 0;
  std::vector<std::string> violations;  // the first few, described
  int violationCount = 0;
  // Growth of the long-lived processes, last window against the first.
  int fdGrowth = 0;            // the largest, over those processes
  int64_t rssGrowthBytes = 0;  // the largest
  bool ok() const { return violationCount == 0; }
};

// RSS a long-lived process may gain between the first window and the last
// (allocator caches and lazily touched pages, not per-update growth):
// max(kRssSlackBytes, kRssSlackFraction of the first window's RSS).
inline constexpr uint64_t kRssSlackBytes = 8ull << 20;
inline constexpr double kRssSlackFraction = 0.10;

// Fills fdGrowth and rssGrowthBytes and adds a violation for each process
// that grew past the bounds.
void checkGrowth(ChaosResult& result);

}  // namespace tide::exec
