#pragma once
// `tide bench gpu`: curves over tensor size (4 KiB .. 1 GiB by default, x4
// steps) of the GPU paths a weight update takes: D2H and H2D staging into
// pinned memory (per tensor and bucketed), D2D copy, FP8 quantization, the
// generator's fill and the XXH3 checksum on the GPU, host pinning cost by
// size and page size, CUDA IPC open + first copy (in a second process), and
// kernel launch overhead. The document names the GPU, driver and CUDA
// runtime. GB/s = 1e9 B/s; every time is the median of the repetitions
// after one warm-up. Needs a CUDA device (built only with TIDE_WITH_CUDA).

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/core/status.h"

namespace tide::harness {

struct GpuBenchOptions {
  uint64_t minBytes = 4ull << 10;
  uint64_t maxBytes = 1ull << 30;
  int repetitions = 5;
  uint64_t bucketBytes = 64ull << 20;  // bucketed staging
  int streams = 2;                     // bucketed staging
  int device = 0;
  std::string self;  // this executable, for the IPC peer process
};

Status validate(const GpuBenchOptions& o);
// The sizes of the curves: minBytes, x4, ..., up to maxBytes (included).
std::vector<uint64_t> gpuBenchSizes(const GpuBenchOptions& o);

// Runs every curve; fails with "no CUDA device" where there is none.
Result<nlohmann::json> runGpuBench(const GpuBenchOptions& o);

// The IPC peer (`tide bench gpu-ipc-peer`): opens `handle`, times the open
// and a first D2D copy of the whole buffer out of it; prints one JSON line.
Status runGpuIpcPeer(const std::string& handle, int device);

}  // namespace tide::harness
