// The list of strategies; add new ones here.

#include <string>

#include "engine/sync/broadcast_strategy.h"
#include "engine/sync/p2p_strategy.h"
#include "engine/sync/strategy.h"

namespace tide::sync {

std::vector<std::string> strategyNames() {
  return {"broadcast", "p2p"};
}

Result<std::unique_ptr<Strategy>> createStrategy(std::string_view name) {
  if (name == "broadcast") return std::unique_ptr<Strategy>(new BroadcastStrategy());
  if (name == "p2p") return std::unique_ptr<Strategy>(new P2pStrategy());
  std::string known;
  for (const auto& n : strategyNames()) known += (known.empty() ? "" : ", ") + n;
  return TIDE_ERROR(Code::kInvalidArgument,
                    "unknown strategy '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace tide::sync
