#include "harness/sync_switch_report.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "engine/core/units.h"

namespace tide::harness {

void reportSwitchAndJoin(bool shadow, const std::vector<exec::StepStats>& steps,
                         const exec::ExecReport& r, nlohmann::json& j) {
  if (shadow) {
    nlohmann::json arr = nlohmann::json::array();
    std::vector<double> pauses;
    uint64_t reads = 0, during = 0, torn = 0;
    for (size_t i = 0; i < r.switches.size(); ++i) {
      const auto& s = r.switches[i];
      const double transfer = i < steps.size() ? steps[i].seconds : 0.0;
      arr.push_back({{"step", s.step},
                     {"pause_us", s.pauseSeconds * 1e6},
                     {"skew_us", s.skewSeconds * 1e6},
                     {"transfer_seconds", transfer},
                     {"generation_reads", s.generationReads},
                     {"reads_during_update", s.readsDuringUpdate},
                     {"torn_reads", s.tornReads}});
      pauses.push_back(s.pauseSeconds);
      reads += s.generationReads;
      during += s.readsDuringUpdate;
      torn += s.tornReads;
    }
    std::sort(pauses.begin(), pauses.end());
    const double median = pauses.empty() ? 0.0 : pauses[pauses.size() / 2];
    std::vector<double> transfers;
    for (const auto& s : steps) transfers.push_back(s.seconds);
    std::sort(transfers.begin(), transfers.end());
    j["switch"] = {{"mode", "shadow"},
                   {"shadow_bytes", r.shadowBytes},
                   {"median_pause_us", median * 1e6},
                   {"steps", arr}};
    std::printf(
        "switch    shadow copy %s (all ranks); pause %.1f us vs %.3f s transfer (medians); "
        "generation read %llu times (%llu during updates), %llu torn\n",
        formatBytes(r.shadowBytes).c_str(), median * 1e6,
        transfers.empty() ? 0.0 : transfers[transfers.size() / 2],
        static_cast<unsigned long long>(reads), static_cast<unsigned long long>(during),
        static_cast<unsigned long long>(torn));
  }
  if (r.join.step >= 0) {
    j["join"] = {{"step", r.join.step},
                 {"version", r.join.version},
                 {"seconds", r.join.seconds},
                 {"pull_seconds", r.join.pullSeconds},
                 {"other_engines_seconds", r.join.othersSeconds},
                 {"bytes", r.join.bytes},
                 {"ranks", r.join.ranks}};
    std::string ranks;
    for (int x : r.join.ranks) ranks += " " + std::to_string(x);
    std::printf(
        "join      engine (ranks%s) joined at step %d: v%d pulled under a lease, %s in "
        "%.3f s (+ %.3f s bit-exact check); the other engines' update meanwhile %.3f s\n",
        ranks.c_str(), r.join.step, r.join.version, formatBytes(r.join.bytes).c_str(),
        r.join.pullSeconds, r.join.seconds - r.join.pullSeconds, r.join.othersSeconds);
  }
}

}  // namespace tide::harness
