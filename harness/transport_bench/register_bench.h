#pragma once
// `tide bench register`: what a backend's memory registration costs, by
// region size: one rank (world of one) registers a freshly allocated and
// touched buffer, as the executor's set-up does, and deregisters it; median
// seconds of each over `repetitions`, and seconds per page. The figure the
// `tide` cost profile's `register_page` comes from (profiles/tide.toml).

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace tide::harness {

struct RegisterBenchOptions {
  std::string backend = "tcp";
  std::vector<uint64_t> sizes;  // bytes per region
  int repetitions = 5;
  std::vector<std::string> devices;  // rdma
};

// Result document (schema tide.bench.register/1), or the first error.
Result<nlohmann::json> runRegisterBench(const RegisterBenchOptions& o);

}  // namespace tide::harness
