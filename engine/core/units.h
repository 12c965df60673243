#pragma once
// Units. Bandwidth is always GB/s = 1e9 B/s (as nccl-tests report it); sizes
// are bytes. Human input accepts B, KB/MB/GB/TB (powers of 1000) and
// KiB/MiB/GiB/TiB (powers of 1024).

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/core/status.h"

namespace tide {

inline constexpr uint64_t kKiB = 1024ull;
inline constexpr uint64_t kMiB = 1024ull * kKiB;
inline constexpr uint64_t kGiB = 1024ull * kMiB;
inline constexpr double kGB = 1e9;  // for GB/s

// "1GiB" -> 1073741824. Rejects negatives, unknown suffixes, overflow, and a
// lowercase b ("1Gb" is bits, not a size).
Result<uint64_t> parseSize(std::string_view text);
// Non-negative integer ("8"), rejecting signs, junk and overflow.
Result<uint64_t> parseCount(std::string_view text);
// Rates such as "400Gbps", "50GB/s", "3.35TB/s", "10Gbit" -> bytes per second. A lowercase
// b is bits, an uppercase B bytes ("400Gb/s" = "50GB/s"); a unit is required.
Result<double> parseRate(std::string_view text);

// 1073741824 -> "1 GiB"; 1500 -> "1500 B" (exact when a power-of-two unit fits).
std::string formatBytes(uint64_t bytes);
// bytes / seconds in GB/s.
inline double gbps(uint64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / seconds / kGB : 0.0;
}

}  // namespace tide
