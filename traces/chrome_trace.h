#pragma once
// A timeline a person opens: the Chrome trace-event format (the JSON that
// Perfetto UI and chrome://tracing read). One process per side of a run
// ("real", "simulated"), one track per rank, a slice per unit of the plan's
// schedule (named by its kind, with bytes and peer as args), and counters:
// each rank's send rate over time, from its slices. docs/formats/timeline.md.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace tide::traces {

struct TimelineSlice {
  int process = 0;  // pid: one side of a run
  int track = 0;    // tid: a rank
  std::string name;
  double start = 0;  // seconds from the run's (or the step's) start
  double end = 0;
  uint64_t bytes = 0;
  int32_t peer = -1;   // where the bytes went (-1: nowhere, a local unit)
  int64_t unit = -1;   // the schedule's unit (-1: none)
  uint32_t piece = 0;  // of the unit
  int32_t step = 0;    // the update
};

class ChromeTrace {
 public:
  void nameProcess(int process, const std::string& name);
  void nameTrack(int process, int track, const std::string& name);
  void add(TimelineSlice s) { slices_.push_back(std::move(s)); }
  // For every track of `process`, a counter of its send rate (GB/s): the
  // bytes of each slice with a peer spread evenly over its duration.
  void addSendRates(int process);
  size_t sliceCount() const { return slices_.size(); }
  // Slices sorted by start within each track, timestamps in microseconds.
  [[nodiscard]] Status write(const std::string& path) const;

 private:
  struct Counter {
    int process = 0;
    std::string name;
    double t = 0;
    double value = 0;
  };
  std::map<int, std::string> processes_;
  std::map<std::pair<int, int>, std::string> tracks_;
  std::vector<TimelineSlice> slices_;
  std::vector<Counter> counters_;
};

}  // namespace tide::traces
