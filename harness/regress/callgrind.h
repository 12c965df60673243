#pragma once
// Instruction counts of the CPU-bound kernels (harness/bench/instr_kernels.h):
// runs build/bench/tide_kernels under `valgrind --tool=callgrind
// --instr-atstart=no`, one process per kernel (so that no kernel's count
// depends on what ran before it), and reads each kernel's dump: its total
// instructions (Ir) and its functions' self instructions.
// Counts do not move with machine load; they do move with the compiler, the
// C library's CPU-specific routines and the libraries' versions, so a
// baseline holds for one build environment (docs/regressions.md).

#include <map>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "harness/regress/budgets.h"

namespace tide::harness::regress {

struct KernelCount {
  std::string kernel;
  double instructions = 0;
  FunctionProfile functions;  // self Ir of every function
  std::string dump;           // the callgrind file it came from
  std::string creator;        // "callgrind-3.19.0"
};

struct CallgrindOptions {
  std::string valgrind;              // path of valgrind
  std::string driver;                // path of tide_kernels
  std::vector<std::string> kernels;  // empty: all
  std::string workDir;               // dumps and logs go here
  double timeoutSeconds = 900;
};

struct CallgrindRun {
  std::vector<KernelCount> kernels;
  std::string driverOutput;  // tide_kernels' output (one line per kernel)
  bool planted = false;      // the driver ran a deliberate slowdown (TIDE_KERNELS_PLANT)
  double seconds = 0;
};

// The first executable `name` in PATH, or "".
std::string findInPath(const std::string& name);

[[nodiscard]] Result<CallgrindRun> runCallgrind(const CallgrindOptions& o);

// One callgrind dump: its trigger's name (the kernel), total Ir, self Ir per function.
[[nodiscard]] Result<KernelCount> readCallgrindDump(const std::string& path);

}  // namespace tide::harness::regress
