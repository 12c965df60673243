#pragma once
// A result set: named metrics, each with repeated samples and a direction.
// Loaded from Google Benchmark JSON (per-repetition iteration entries) or
// from tide result JSON files that carry a "samples" object:
//   "samples": {"<metric>": {"values": [..], "unit": "gbps", "better": "higher"}}

#include <map>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace tide::harness {

struct Metric {
  std::vector<double> values;
  std::string unit;
  bool higherIsBetter = false;
};

struct ResultSet {
  std::string label;  // file or directory it came from
  std::map<std::string, Metric> metrics;
};

// Loads a file, or every *.json file under a directory (metric names are
// prefixed by the file stem when a directory holds several files).
Result<ResultSet> loadResultSet(const std::string& path);

}  // namespace tide::harness
