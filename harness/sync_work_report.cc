#include "harness/sync_work_report.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>

#include "engine/core/units.h"
#include "engine/exec/executor/step_support.h"

namespace tide::harness {

Status reportWork(const plan::TransferPlan& p, const exec::SetupStats& setup, nlohmann::json& j) {
  std::map<plan::StepKind, uint64_t> kinds;  // steps of each kind
  for (const auto& s : p.work.steps)
    if (s.kind != plan::StepKind::kJoin) ++kinds[s.kind];
  nlohmann::json work = nlohmann::json::object();
  for (const auto& [kind, n] : kinds) {
    const std::string why = exec::whyNotPerformed(kind);
    work[plan::stepKindName(kind)] = {{"steps", n},
                                      {"outcome", why.empty() ? "performed" : "skipped: " + why}};
  }
  auto reg = kinds.find(plan::StepKind::kRegister);
  if (reg != kinds.end()) {
    nlohmann::json ranks = nlohmann::json::array();
    double pages = 0, bytes = 0, slowest = 0, total = 0;
    uint64_t registered = 0;
    for (const auto& s : p.work.steps) {
      if (s.kind != plan::StepKind::kRegister) continue;
      if (s.rank >= setup.ranks.size())
        return TIDE_ERROR(Code::kInternal, "sync: no set-up report from rank " +
                                               std::to_string(s.rank) + " (a register step)");
      const exec::SetupWork& w = setup.ranks[s.rank];
      if (static_cast<double>(w.registeredBytes) < s.bytes)
        return TIDE_ERROR(Code::kInternal, "sync: rank " + std::to_string(s.rank) + " registered " +
                                               std::to_string(w.registeredBytes) +
                                               " bytes; its register step " + "counts " +
                                               std::to_string(static_cast<uint64_t>(s.bytes)));
      pages += s.count;
      bytes += s.bytes;
      registered += w.registeredBytes;
      slowest = std::max(slowest, w.registerSeconds);
      total += w.registerSeconds;
      ranks.push_back({{"rank", s.rank},
                       {"pages", s.count},
                       {"bytes", s.bytes},
                       {"registrations", w.registrations},
                       {"seconds", w.registerSeconds}});
    }
    auto& r = work["register"];
    r["page_bytes"] = p.params.options.pageBytes;
    r["pages"] = pages;
    r["bytes"] = bytes;
    r["registered_bytes"] = registered;  // with a version switch's shadow copies
    r["seconds_max"] = slowest;
    // Each rank pins its own pages at once: the cost of a page is a rank's.
    r["seconds_per_page"] = pages > 0 ? total / pages : 0.0;
    r["ranks"] = std::move(ranks);
    std::printf("setup     registered %s in %.0f pages on %llu ranks: slowest rank %.4f s\n",
                formatBytes(static_cast<uint64_t>(bytes)).c_str(), pages,
                static_cast<unsigned long long>(reg->second), slowest);
  }
  for (const auto& [kind, n] : kinds) {
    const std::string why = exec::whyNotPerformed(kind);
    if (!why.empty())
      std::printf("work      %llu %s steps skipped: %s\n", static_cast<unsigned long long>(n),
                  plan::stepKindName(kind), why.c_str());
  }
  j["work"] = std::move(work);
  return Status::ok();
}

}  // namespace tide::harness
