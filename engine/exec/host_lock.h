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

}  // namespace tide::exec
