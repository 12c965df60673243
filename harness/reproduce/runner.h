#pragma once
// Runs parts as subprocesses (own process group, output to a log file, a
// deadline), so one failing or hanging part is reported and the rest go on.

#include <string>

#include "harness/reproduce/part.h"

namespace tide::harness::reproduce {

// Runs `part`, its stdout+stderr going to `logPath`.
PartResult runPart(const Part& part, const std::string& logPath);

}  // namespace tide::harness::reproduce
