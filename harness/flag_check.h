#pragma once
// One error line for a numeric flag outside its range, the value printed
// compactly ("--lr must be finite and > 0 (got nan)"): CLI11's own range
// message prints the bound in full (DBL_MAX has 300 digits).

#include <cstdio>
#include <string>

#include "engine/core/status.h"

namespace tide::harness {

inline StatusError flagError(const std::string& flag, const std::string& want, double got) {
  char v[32];
  std::snprintf(v, sizeof v, "%g", got);
  return StatusError(
      TIDE_ERROR(Code::kInvalidArgument, flag + " must be " + want + " (got " + v + ")"));
}

}  // namespace tide::harness
