#pragma once
// What a long-lived process holds, read from /proc: open file descriptors,
// resident memory and threads. A soak samples them over time; growth
// between samples is a leak.

#include <sys/types.h>

#include <cstdint>

#include "engine/core/status.h"

namespace tide::exec {

struct ProcessSample {
  int fds = 0;            // entries of /proc/<pid>/fd
  uint64_t rssBytes = 0;  // VmRSS of /proc/<pid>/status
  int threads = 0;        // Threads of /proc/<pid>/status
};

// kNotFound when the process is gone.
Result<ProcessSample> sampleProcess(pid_t pid);

}  // namespace tide::exec
