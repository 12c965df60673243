#include "engine/exec/chaos/chaos_report.h"

#include <algorithm>

namespace tide::exec {

void ChaosWindow::add(const ChaosWindow& o) {
  if (updates == 0 || o.firstUpdate < firstUpdate) firstUpdate = o.firstUpdate;
  lastUpdate = std::max(lastUpdate, o.lastUpdate);
  updates += o.updates;
  committed += o.committed;
  abandoned += o.abandoned;
  for (const auto& [k, n] : o.injected) injected[k] += n;
  for (const auto& [k, n] : o.missed) missed[k] += n;
  checked += o.checked;
  matched += o.matched;
  mismatched += o.mismatched;
  generationReads += o.generationReads;
  tornReads += o.tornReads;
  hangs += o.hangs;
  restarts += o.restarts;
  reloads += o.reloads;
  epochs += o.epochs;
  updateSeconds.insert(updateSeconds.end(), o.updateSeconds.begin(), o.updateSeconds.end());
}

double ChaosWindow::medianSeconds() const {
  if (updateSeconds.empty()) return 0;
  std::vector<double> s = updateSeconds;
  std::nth_element(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(s.size() / 2), s.end());
  return s[s.size() / 2];
}

double ChaosWindow::maxSeconds() const {
  return updateSeconds.empty() ? 0 : *std::max_element(updateSeconds.begin(), updateSeconds.end());
}

void checkGrowth(ChaosResult& r) {
  r.fdGrowth = 0;
  r.rssGrowthBytes = 0;
  if (r.windows.size() < 2) return;  // one window: nothing to compare it with
  const auto& first = r.windows.front().processes;
  const auto& last = r.windows.back().processes;
  for (const ProcessRecord& b : first) {
    auto it = std::find_if(last.begin(), last.end(),
                           [&](const ProcessRecord& p) { return p.pid == b.pid; });
    if (it == last.end()) continue;  // restarted since: not long-lived
    const std::string who = b.rank < 0 ? "the driver" : "rank " + std::to_string(b.rank);
    const int fd = it->fds - b.fds;
    const int64_t rss = static_cast<int64_t>(it->rssBytes) - static_cast<int64_t>(b.rssBytes);
    r.fdGrowth = std::max(r.fdGrowth, fd);
    r.rssGrowthBytes = std::max(r.rssGrowthBytes, rss);
    const double allowed =
        std::max<double>(kRssSlackBytes, kRssSlackFraction * static_cast<double>(b.rssBytes));
    std::string v;
    if (fd > 0) {
      v = who + " holds " + std::to_string(fd) + " more file descriptors after update " +
          std::to_string(r.windows.back().lastUpdate) + " than after update " +
          std::to_string(r.windows.front().lastUpdate);
    } else if (static_cast<double>(rss) > allowed) {
      v = who + " grew by " + std::to_string(rss >> 10) + " KiB of resident memory after update " +
          std::to_string(r.windows.front().lastUpdate) + " (allowed " +
          std::to_string(static_cast<int64_t>(allowed) >> 10) + " KiB)";
    }
    if (v.empty()) continue;
    ++r.violationCount;
    if (r.violations.size() < 20) r.violations.push_back(v);
  }
}

}  // namespace tide::exec
