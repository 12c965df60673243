#include "engine/exec/executor/incoming_groups.h"

#include <string>

namespace tide::exec {

Result<std::vector<OutGroup>> incomingGroups(const plan::TransferPlan& plan,
                                             const std::vector<RankLayout>& layouts,
                                             const RankSchedule& mine) {
  std::vector<OutGroup> out(mine.in.size());
  std::vector<char> seen(mine.in.size(), 0);
  std::vector<char> built(plan.ranks.size(), 0);
  for (const InUnit& u : mine.in) {
    if (built[u.src]) continue;
    built[u.src] = 1;
    TIDE_ASSIGN_OR_RETURN(RankSchedule s, RankSchedule::build(plan, *mine.units, layouts,
                                                              static_cast<uint32_t>(u.src)));
    for (OutGroup& g : s.out) {
      if (g.peer != static_cast<int32_t>(mine.rank)) continue;
      if (g.unit >= out.size() || seen[g.unit]) {
        return TIDE_ERROR(Code::kInternal, "exec: rank " + std::to_string(u.src) +
                                               " numbers unit " + std::to_string(g.unit) +
                                               " of rank " + std::to_string(mine.rank) +
                                               " differently");
      }
      seen[g.unit] = 1;
      out[g.unit] = std::move(g);
    }
  }
  for (size_t i = 0; i < seen.size(); ++i) {
    if (!seen[i]) {
      return TIDE_ERROR(Code::kInternal, "exec: no sender group for unit " + std::to_string(i) +
                                             " of rank " + std::to_string(mine.rank));
    }
  }
  return out;
}

}  // namespace tide::exec
