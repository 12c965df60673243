#pragma once
// Runs a command to completion with its stdout and stderr in a log file and
// a deadline (killed past it): the gate's callgrind run and `tide ab`'s
// benchmark runs.

#include <string>
#include <vector>

#include "engine/core/status.h"

namespace tide::harness::regress {

// The exit code (128 + signal when killed by one). `env` adds or replaces
// variables ("K=V") of this process's environment. kTimeout past the
// deadline; kNotFound when argv[0] cannot be started.
[[nodiscard]] Result<int> runLogged(const std::vector<std::string>& argv, const std::string& log,
                                    double timeoutSeconds,
                                    const std::vector<std::string>& env = {});

}  // namespace tide::harness::regress
