#pragma once
// Reading, writing and validating trace files. Every error is one Status
// (bad path, not HDF5, truncated, wrong schema or version, wrong shapes or
// types, inconsistent counts); nothing is printed by HDF5.

#include <string>

#include "engine/core/status.h"
#include "traces/trace.h"

namespace tide::traces {

// Writes a complete trace (overwrites the file). /events is created
// extendible, so EventWriter can append to it later.
Status writeTrace(const std::string& path, const TraceData& data);

struct ReadOptions {
  bool events = true;   // load /events
  bool rollout = true;  // load /rollout
};
// Reads and validates every group: schema name and version, shapes against
// /meta, integer types for counts, changed <= checked <= numel, finite and
// ordered times.
Result<TraceData> readTrace(const std::string& path, const ReadOptions& opts = {});

// Summary for `tide trace info`.
std::string describeTrace(const TraceData& data);

}  // namespace tide::traces
