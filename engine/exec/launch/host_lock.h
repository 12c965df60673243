#pragma once
// One cluster of a kind per host: an flock on a file under /run, waited for
// up to a deadline (the emulated and the rxe cluster each take their own).

#include <string>

#include "engine/core/fd.h"
#include "engine/core/status.h"

namespace tide::exec {

// Locks `path` exclusively; `what` names the cluster in the messages
// ("emulated cluster"). kUnavailable when another holder stays past waitSeconds.
Result<UniqueFd> lockHostFile(const char* path, const std::string& what, double waitSeconds);

// What creating a cluster of a kind starts with: its size (1..maxNodes) and
// NIC rate checked, the host's missing capability (`missing`, empty when
// none) refused with `missingCode`, the host lock at `lockPath` taken, and a
// random name prefix `tag` + 4 hex digits for its devices and namespaces.
struct ClusterClaim {
  UniqueFd lock;
  std::string prefix;
};
Result<ClusterClaim> claimHost(const std::string& what, const char* lockPath, int nodes,
                               int maxNodes, double bytesPerSecond, const std::string& missing,
                               Code missingCode, const char* tag, double waitSeconds);

}  // namespace tide::exec
