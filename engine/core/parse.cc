#include "engine/core/parse.h"

#include <charconv>
#include <cmath>
#include <string>

namespace tide {
namespace {

// Peer text may be huge or binary: quote a bounded, printable prefix of it.
std::string quoted(std::string_view text) {
  constexpr size_t kMax = 64;
  std::string out = "'";
  for (size_t i = 0; i < text.size() && i < kMax; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    out += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
  }
  out += text.size() > kMax ? "...'" : "'";
  return out;
}

Status malformed(std::string_view text, const char* what, const char* expected) {
  if (text.empty())
    return TIDE_ERROR(Code::kInvalidArgument,
                      std::string("malformed ") + what + ": empty (expected " + expected + ")");
  return TIDE_ERROR(Code::kInvalidArgument, std::string("malformed ") + what + ": " + quoted(text) +
                                                " (expected " + expected + ")");
}

Status outOfRange(std::string_view text, const char* what) {
  return TIDE_ERROR(Code::kInvalidArgument,
                    std::string("malformed ") + what + ": " + quoted(text) + " is out of range");
}

template <typename T>
Result<T> parseInteger(std::string_view text, const char* what, int base, const char* expected) {
  if (base < 2 || base > 36)
    return TIDE_ERROR(Code::kInternal, std::string("bad base for ") + what);
  // from_chars takes a '-' for signed types only and never a '+', so the
  // text is all digits (after one '-' for signed).
  T value{};
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value, base);
  if (ec == std::errc::result_out_of_range) return outOfRange(text, what);
  if (text.empty() || ec != std::errc() || ptr != end) return malformed(text, what, expected);
  return value;
}

}  // namespace

Result<uint64_t> parseUnsigned(std::string_view text, const char* what, int base, uint64_t max) {
  TIDE_ASSIGN_OR_RETURN(uint64_t v,
                        parseInteger<uint64_t>(text, what, base, "an unsigned integer"));
  if (v > max) return outOfRange(text, what);
  return v;
}

Result<int64_t> parseSigned(std::string_view text, const char* what, int base) {
  return parseInteger<int64_t>(text, what, base, "an integer");
}

Result<double> parseDouble(std::string_view text, const char* what) {
  double value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value, std::chars_format::general);
  if (ec == std::errc::result_out_of_range) return outOfRange(text, what);
  if (text.empty() || ec != std::errc() || ptr != end) return malformed(text, what, "a number");
  if (!std::isfinite(value)) return malformed(text, what, "a finite number");
  return value;
}

}  // namespace tide
