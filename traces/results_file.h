#pragma once
// results.h5 of `tide reproduce`: every part that ran (or was skipped), its
// exact command, the result documents it wrote and its transfer events, plus
// the environment of the run. The plot scripts in harness/plots/ read only
// this file. Layout: docs/formats/result.md.

#include <string>
#include <utility>
#include <vector>

#include "engine/core/status.h"

namespace tide::traces {

struct ResultRun {
  std::string name;     // part name, a valid HDF5 link name ("sim_kimi_p2p")
  std::string title;    // one line for people
  std::string status;   // ok | failed | skipped
  std::string reason;   // why skipped / failed
  std::string command;  // exact command line
  double seconds = 0;   // wall time of the part
  // The documents the part wrote (JSON text), by name ("result", "sweep"...).
  std::vector<std::pair<std::string, std::string>> documents;
  // Trace files whose /events are copied under /runs/<name>/events/<label>.
  std::vector<std::pair<std::string, std::string>> eventFiles;  // (label, path)
  std::string outputTail;                                       // last lines of stdout+stderr
};

struct ResultsDoc {
  std::vector<std::pair<std::string, std::string>> environment;  // key, value
  std::vector<ResultRun> runs;
};

// Writes a new file (replacing any). Missing event files are an error.
[[nodiscard]] Status writeResultsFile(const std::string& path, const ResultsDoc& doc);

}  // namespace tide::traces
