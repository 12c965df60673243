// tide_kernels: runs the CPU-bound kernels of instr_kernels.h on their fixed
// inputs, for instruction counts under callgrind:
//
//   valgrind --tool=callgrind --instr-atstart=no build/bench/tide_kernels [NAME...]
//
// Each kernel's input is built and one unit run as a warm-up (first calls,
// lazy binding, allocator growth) outside the measurement; then its units
// run with instrumentation on, and the counts are dumped under the kernel's
// name (callgrind.out.<pid>.<n>, "desc: Trigger: Client Request: <name>").
// `tide regress check` runs it so, one kernel per process, and reads the
// dumps. Natively the client requests do nothing and it prints each
// kernel's native time.
//
// TIDE_KERNELS_PLANT=NAME=PCT (or --plant NAME=PCT) makes kernel NAME run
// PCT % more units: a deliberate slowdown, which tests use to show that the
// gate catches one.

#include <valgrind/callgrind.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "harness/bench/instr_kernels.h"

namespace {

using tide::harness::bench::InstrKernel;
using tide::harness::bench::instrKernels;

struct Plant {
  std::string kernel;
  int percent = 0;
};

bool parsePlant(const std::string& text, Plant& p) {
  auto eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0) return false;
  char* end = nullptr;
  long pct = std::strtol(text.c_str() + eq + 1, &end, 10);
  if (end == text.c_str() + eq + 1 || *end != '\0' || pct < 1 || pct > 1000) return false;
  p.kernel = text.substr(0, eq);
  p.percent = static_cast<int>(pct);
  return true;
}

int usage(const char* why) {
  std::fprintf(
      stderr, "tide_kernels: %s\nusage: tide_kernels [--list] [--plant NAME=PCT] [NAME...]\n", why);
  return 2;
}

int run(int argc, char** argv) {
  std::vector<std::string> names;
  Plant plant;
  if (const char* env = std::getenv("TIDE_KERNELS_PLANT"); env != nullptr && *env != '\0') {
    if (!parsePlant(env, plant)) return usage("TIDE_KERNELS_PLANT wants NAME=PCT (1..1000)");
  }
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--list") {
      for (const auto& k : instrKernels())
        std::printf("%-16s %3d units  %s\n", k.name.c_str(), k.units, k.what.c_str());
      return 0;
    }
    if (a == "--plant") {
      if (i + 1 >= argc || !parsePlant(argv[++i], plant))
        return usage("--plant wants NAME=PCT (1..1000)");
      continue;
    }
    if (a.rfind("-", 0) == 0) return usage(("unknown flag " + a).c_str());
    names.push_back(a);
  }
  std::vector<const InstrKernel*> chosen;
  for (const auto& n : names) {
    const InstrKernel* found = nullptr;
    for (const auto& k : instrKernels())
      if (k.name == n) found = &k;
    if (found == nullptr) return usage(("unknown kernel '" + n + "' (see --list)").c_str());
    chosen.push_back(found);
  }
  if (chosen.empty())
    for (const auto& k : instrKernels()) chosen.push_back(&k);
  if (!plant.kernel.empty()) {
    bool known = false;
    for (const auto& k : instrKernels()) known |= k.name == plant.kernel;
    if (!known) return usage(("unknown kernel to plant '" + plant.kernel + "'").c_str());
  }

  for (const InstrKernel* k : chosen) {
    auto unit = k->setup();
    bool ok = true;
    uint64_t check = unit(0, ok);  // warm-up, not counted
    int extra = 0;
    if (k->name == plant.kernel) extra = (k->units * plant.percent + 99) / 100;
    const int total = k->units + extra;
    auto t0 = std::chrono::steady_clock::now();
    CALLGRIND_START_INSTRUMENTATION;
    CALLGRIND_ZERO_STATS;
    for (int u = 0; u < total && ok; ++u) check = check * 1099511628211ull ^ unit(u % k->units, ok);
    CALLGRIND_DUMP_STATS_AT(k->name.c_str());
    CALLGRIND_STOP_INSTRUMENTATION;
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!ok) {
      std::fprintf(stderr, "tide_kernels: %s produced a wrong result\n", k->name.c_str());
      return 1;
    }
    std::printf("%-16s %4d units%s  %10.3f ms  check %016llx\n", k->name.c_str(), total,
                extra ? " (PLANTED)" : "", s * 1e3, static_cast<unsigned long long>(check));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tide_kernels: %s\n", e.what());
    return 1;
  }
}
