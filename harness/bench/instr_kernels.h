#pragma once
// The CPU-bound kernels whose instruction counts the regression gate tracks
// (`tide regress`, docs/regressions.md). Each kernel builds a fixed,
// deterministic input once (not measured), then runs `units` repetitions of
// one unit of work; the driver (instr_main.cc) counts the instructions of
// exactly those repetitions under callgrind. Inputs are small: callgrind
// runs code ~50x slower than native, and the whole set must take seconds.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tide::harness::bench {

struct InstrKernel {
  std::string name;
  std::string what;  // one line: the work and its input
  int units = 1;     // repetitions of `run` per measurement
  // Builds the input; the returned function runs unit `u` (0 <= u < units)
  // and returns a value derived from its result, so no work is elided. It
  // fails (returns false through `ok`) when a result is wrong.
  std::function<std::function<uint64_t(int u, bool& ok)>()> setup;
};

// Every kernel, in the order the driver runs them.
const std::vector<InstrKernel>& instrKernels();

}  // namespace tide::harness::bench
