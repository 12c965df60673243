#pragma once
// Hot loops compiled twice: once for AVX-512 (taken when the CPU has it) and
// once for the baseline target. Both give bit-identical results: the loops
// use only IEEE-exact operations (add, mul, div, sqrt, integer hashing) and
// floating-point contraction into FMA is off (GCC's default with -std=c++20;
// the pragma below for clang), so every rank produces the same bytes
// whichever path its CPU takes.

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

namespace tide::workloads {

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TIDE_TARGET_AVX512 __attribute__((target("avx512f,avx512dq,avx512vl,avx512bw")))
inline bool cpuHasAvx512() {
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                          __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw");
  return has;
}
#else
#define TIDE_TARGET_AVX512
inline bool cpuHasAvx512() {
  return false;
}
#endif

}  // namespace tide::workloads
