#pragma once
// `tide bench transport`: rank 0 WRITEs `bytes` to rank 1 in `block`-sized
// requests (one batch per repetition), one warm-up then `repetitions` timed
// runs; reports median/p5/p95 in GB/s (1e9 B/s) next to a reference measured
// in the same run with the same parallelism (shm: memcpy of the same bytes
// by --streams threads; tcp: iperf3 -P <streams> over loopback, its stream
// count checked in its own report). The transferred bytes are checked by
// checksum.
//
// Ranks are two threads of this process, or two processes when the rank
// environment says so (`tide launch -n 2 -- tide bench transport ...`).

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace tide::harness {

struct TransportBenchOptions {
  std::string backend = "tcp";
  uint64_t bytes = 0;
  uint64_t block = 0;
  int streams = 4;
  int repetitions = 5;
  std::vector<std::string> devices;  // rdma
  bool reference = true;
};

struct Percentiles {
  double median = 0, p5 = 0, p95 = 0;
};
// Linear-interpolated percentiles of `v` (not empty).
Percentiles percentiles(std::vector<double> v);

// Validates the options (one clear error for each bad value).
Status validate(const TransportBenchOptions& o);

// Runs the benchmark; returns the result document (schema
// tide.bench.transport/1) on rank 0, and a null json on other ranks.
Result<nlohmann::json> runTransportBench(const TransportBenchOptions& o);

// One line for humans from the result document.
std::string summarize(const nlohmann::json& result);

}  // namespace tide::harness
