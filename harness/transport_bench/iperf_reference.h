#pragma once
// The tcp benchmark's reference: what iperf3 moves over loopback on this
// machine, measured in the same run (server and client started here).

#include <cstdint>
#include <string>

#include "engine/core/status.h"

namespace tide::harness {

struct IperfRun {
  double gbps = 0;  // received bytes / receiver seconds, in GB/s (1e9 B/s)
  int streams = 0;  // parallel streams, as iperf3 reports them (start.test_start.num_streams)
};

// Absolute path of iperf3 in PATH, or "" when it is not installed.
std::string findIperf3();

// One iperf3 transfer of `bytes` over 127.0.0.1 with `streams` parallel
// streams. Starts a one-shot server on a free port, then the client with -J.
Result<IperfRun> runIperf3(const std::string& iperf3, uint64_t bytes, int streams,
                           double timeoutSeconds);

}  // namespace tide::harness
