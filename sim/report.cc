#include "sim/report.h"

#include <cstdio>
#include <fstream>

namespace tide::sim {

void printStrategyResult(const StrategyResult& r, const Scenario& sc) {
  std::printf("%s / %s: %.3f s  (lower bound %.3f s on %s; %.1f GB per inference rank)\n",
              r.scenario.c_str(), r.strategy.c_str(), r.seconds, r.lowerBoundSeconds,
              r.bottleneck.c_str(), r.bytesPerInferRank / 1e9);
  std::printf("  %-14s %10s %10s %10s %12s\n", "stage", "first_s", "last_s", "busy_s", "GB");
  for (const auto& s : r.stages) {
    if (s.tasks == 0) continue;
    std::printf("  %-14s %10.3f %10.3f %10.3f %12.2f\n", s.name.c_str(), s.first, s.last, s.busy,
                s.bytes / 1e9);
  }
  for (const auto& [name, secs] : sc.published) {
    if (name != r.strategy) continue;
    std::printf("  published %.3f s, error %+.1f %%\n", secs, (r.seconds / secs - 1) * 100);
  }
  std::printf("  %llu tasks, %llu flows, %.2f s wall, %.0f events/s\n",
              static_cast<unsigned long long>(r.tasks), static_cast<unsigned long long>(r.flows),
              r.wallSeconds, r.eventsPerSecond);
}

Status writeJsonFile(const std::string& path, const nlohmann::json& j) {
  std::ofstream out(path);
  if (!out) return TIDE_ERROR(Code::kInvalidArgument, "cannot write " + path);
  out << j.dump(2) << "\n";
  if (!out) return TIDE_ERROR(Code::kDataLoss, "short write to " + path);
  return Status::ok();
}

}  // namespace tide::sim
