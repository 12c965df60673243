#pragma once
// One part of the reproduction set: a subprocess (the tide binary itself, a
// benchmark executable or a script), the files it writes, and why it is
// skipped when it cannot run here.

#include <string>
#include <utility>
#include <vector>

namespace tide::harness::reproduce {

struct Part {
  std::string name;   // short id, also the results.h5 group name
  std::string title;  // one line for people
  std::vector<std::string> argv;
  double expectSeconds = 10;  // for the ETA only
  int timeoutSeconds = 300;
  std::string skipReason;  // non-empty: not run
  // (label, path) of JSON documents / event traces the part writes.
  std::vector<std::pair<std::string, std::string>> documents;
  std::vector<std::pair<std::string, std::string>> eventFiles;
};

struct PartResult {
  std::string status;  // ok | failed | skipped
  std::string reason;
  double seconds = 0;
  int exitCode = 0;
  std::string outputTail;
};

struct SetOptions {
  bool quick = false;
  bool tinyHeadline = false;  // the headline on tiny-moe (headline.h), for tests
  std::string tide;           // the tide binary
  std::string source;         // source tree (scenarios/, scripts/)
  std::string partDir;        // where parts write their files
  std::string outDir;         // where REPORT.md and its figures go
};

// The simulated Kimi-K2 rows: the part "sim_kimi_<design>" simulates the
// strategy that models the published run of that design.
struct SimulatedRow {
  const char* design;
  const char* strategy;
};
inline constexpr SimulatedRow kKimiSimRows[] = {{"broadcast", "miles-broadcast"},
                                                {"p2p", "miles-p2p"}};

// The reproduction set, in run order.
std::vector<Part> reproductionSet(const SetOptions& o);

// Shell-quoted command line of a part.
std::string commandLine(const std::vector<std::string>& argv);

}  // namespace tide::harness::reproduce
