#include "engine/core/units.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

#include "engine/core/parse.h"

namespace tide {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Splits "12.5GiB" into 12.5 and "GiB" (the unit as written: b and B differ).
Result<std::pair<double, std::string>> splitNumber(std::string_view text, const char* what) {
  std::string_view s = trim(text);
  if (s.empty()) return TIDE_ERROR(Code::kInvalidArgument, std::string("empty ") + what);
  if (s.front() == '-' || s.front() == '+')
    return TIDE_ERROR(
        Code::kInvalidArgument,
        std::string(what) + " must be a non-negative number: '" + std::string(text) + "'");
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  if (i == 0)
    return TIDE_ERROR(Code::kInvalidArgument,
                      std::string(what) + " must start with a number: '" + std::string(text) + "'");
  double value = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + i, value);
  if (ec != std::errc() || ptr != s.data() + i || !std::isfinite(value))
    return TIDE_ERROR(Code::kInvalidArgument,
                      std::string("bad number in ") + what + ": '" + std::string(text) + "'");
  return std::make_pair(value, std::string(trim(s.substr(i))));
}

}  // namespace

Result<uint64_t> parseSize(std::string_view text) {
  TIDE_ASSIGN_OR_RETURN(auto parts, splitNumber(text, "size"));
  const double value = parts.first;
  // A lowercase b is bits, as in rates: "1Gb" is not a size.
  if (!parts.second.empty() && parts.second.back() == 'b') {
    return TIDE_ERROR(Code::kInvalidArgument,
                      "size unit '" + parts.second + "' in '" + std::string(text) +
                          "' is bits; sizes are bytes: B, KiB, MiB, GiB, TiB, KB, MB, GB, TB");
  }
  const std::string unit = lower(parts.second);
  double mult = 0;
  if (unit.empty() || unit == "b")
    mult = 1;
  else if (unit == "kib" || unit == "k")
    mult = 1024.0;
  else if (unit == "mib" || unit == "m")
    mult = 1024.0 * 1024;
  else if (unit == "gib" || unit == "g")
    mult = 1024.0 * 1024 * 1024;
  else if (unit == "tib" || unit == "t")
    mult = 1024.0 * 1024 * 1024 * 1024;
  else if (unit == "kb")
    mult = 1e3;
  else if (unit == "mb")
    mult = 1e6;
  else if (unit == "gb")
    mult = 1e9;
  else if (unit == "tb")
    mult = 1e12;
  else
    return TIDE_ERROR(Code::kInvalidArgument, "unknown size unit '" + unit + "' in '" +
                                                  std::string(text) +
                                                  "' (use B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)");
  double bytes = value * mult;
  if (bytes >= 1.8e19)
    return TIDE_ERROR(Code::kInvalidArgument, "size too large: '" + std::string(text) + "'");
  if (bytes != std::floor(bytes))
    return TIDE_ERROR(Code::kInvalidArgument,
                      "size is not a whole number of bytes: '" + std::string(text) + "'");
  return static_cast<uint64_t>(bytes);
}

Result<uint64_t> parseCount(std::string_view text) {
  // The strict parse is parseUnsigned's; a count from a user may carry spaces.
  auto v = parseUnsigned(trim(text), "count");
  if (!v.isOk())
    return TIDE_ERROR(Code::kInvalidArgument,
                      "expected a non-negative integer, got '" + std::string(text) + "'");
  return v;
}

Result<double> parseRate(std::string_view text) {
  TIDE_ASSIGN_OR_RETURN(auto parts, splitNumber(text, "rate"));
  const double value = parts.first;
  // b is bits and B is bytes ("400Gb/s" is 50 GB/s), so the case of that
  // one letter counts; the prefix and the rest do not.
  std::string_view s = parts.second;
  if (s.empty()) {
    return TIDE_ERROR(Code::kInvalidArgument,
                      "rate '" + std::string(text) + "' needs a unit (Gbps, Gb/s, GB/s, ...)");
  }
  double prefix = 1;
  if (s.size() > 1) {
    switch (s.front()) {
      case 'T':
      case 't':
        prefix = 1e12;
        break;
      case 'G':
      case 'g':
        prefix = 1e9;
        break;
      case 'M':
      case 'm':
        prefix = 1e6;
        break;
      case 'K':
      case 'k':
        prefix = 1e3;
        break;
      default:
        break;
    }
    if (prefix != 1) s.remove_prefix(1);
  }
  const bool b = !s.empty() && (s[0] == 'b' || s[0] == 'B');
  const std::string rest = b ? lower(s.substr(1)) : std::string();
  double bitsPerUnit = 0;
  if (b && (rest == "it" || rest == "it/s" || rest == "its/s")) {
    bitsPerUnit = 1;  // "Gbit", "Gbit/s"
  } else if (b && (rest == "yte/s" || rest == "ytes/s")) {
    bitsPerUnit = 8;  // "GByte/s"
  } else if (b && (rest == "ps" || rest == "/s")) {
    bitsPerUnit = s[0] == 'b' ? 1 : 8;  // "Gbps", "Gb/s" | "GBps", "GB/s"
  }
  if (bitsPerUnit == 0)
    return TIDE_ERROR(Code::kInvalidArgument,
                      "unknown rate unit '" + parts.second + "' in '" + std::string(text) +
                          "' (bits/s: Gbps, Gb/s, Gbit/s; bytes/s: GB/s, GBps; also T, M, K)");
  const double bytesPerSec = value * prefix * bitsPerUnit / 8;
  if (bytesPerSec <= 0)
    return TIDE_ERROR(Code::kInvalidArgument, "rate must be positive: '" + std::string(text) + "'");
  return bytesPerSec;
}

std::string formatBytes(uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  uint64_t v = bytes;
  while (u < 4 && v >= 1024 && v % 1024 == 0) {
    v /= 1024;
    ++u;
  }
  if (u > 0 || bytes < 10240) return std::to_string(v) + " " + kUnits[u];
  // Not an exact power-of-two multiple: show three significant digits.
  double d = static_cast<double>(bytes);
  u = 0;
  while (u < 4 && d >= 1024) {
    d /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g %s", d, kUnits[u]);
  return buf;
}

}  // namespace tide
