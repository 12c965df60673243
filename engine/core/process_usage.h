#pragma once
// This process's CPU time and peak memory, for the benchmarks and checks that
// bound them: CPU time, unlike wall time, does not grow with what else the
// host runs.

#include <sys/resource.h>

namespace tide {

// User + system CPU seconds of this process so far (all its threads).
inline double processCpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

// Peak resident set size of this process, bytes (Linux reports KiB).
inline double peakRssBytes() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) * 1024.0;
}

}  // namespace tide
