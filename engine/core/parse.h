#pragma once
// Non-throwing number parsing for text from peers, the rendezvous store or
// files. std::sto* throws on garbage and overflow, so a malformed record from
// another process could end this one; these return one Status instead
// (kInvalidArgument, naming `what` and the text). The whole text must be the
// number: no whitespace, no sign on unsigned, no "0x" prefix, no trailing junk.

#include <cstdint>
#include <limits>
#include <string_view>

#include "engine/core/status.h"

namespace tide {

// Digits in `base` (2..36), at most `max`.
Result<uint64_t> parseUnsigned(std::string_view text, const char* what, int base = 10,
                               uint64_t max = std::numeric_limits<uint64_t>::max());
// An optional '-' then digits in `base`.
Result<int64_t> parseSigned(std::string_view text, const char* what, int base = 10);
// A finite decimal or scientific number ("1.5", "-2e-3"); inf and nan are refused.
Result<double> parseDouble(std::string_view text, const char* what);

}  // namespace tide
