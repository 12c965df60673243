#pragma once
// What `tide reproduce` writes after the parts ran: the figures pulled out of
// the parts' result documents, summary.json, REPORT.md and results.h5.

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/status.h"
#include "harness/reproduce/part.h"
#include "sim/scenario.h"

namespace tide::harness::reproduce {

// One measured or simulated figure beside its reference or lower bound.
struct Figure {
  std::string group;  // table it belongs to
  std::string name;   // what it is
  std::string unit;   // s, GB/s, ...
  double value = 0;
  std::string refName;  // "published", "lower bound", "iperf3", ... ("" = none)
  double refValue = 0;
  std::string part;  // the part that produced it
};

struct RunRecord {
  Part part;
  PartResult result;
};

struct ReportInput {
  bool quick = false;
  bool tinyHeadline = false;  // the headline ran on tiny-moe (headline.h)
  std::string source;         // source tree: shown commands are relative to it
  std::string command;        // the reproduce command line
  std::string started;        // UTC ISO time
  double seconds = 0;
  std::vector<std::pair<std::string, std::string>> environment;
  std::vector<RunRecord> runs;
  // Published figures of the simulated scenario.
  std::vector<sim::Scenario::Published> published;
  // Why no figures were made ("" = the plot script ran).
  std::string figuresSkipped;
};

// The record of a part, or null when it was not in the set.
const RunRecord* findRun(const ReportInput& in, const std::string& name);
// A part's first JSON document: null when the part did not end "ok" (unless
// `anyStatus`) or wrote none.
nlohmann::json partDocument(const ReportInput& in, const std::string& name, bool anyStatus = false);

// Reads the parts' documents (missing ones are ignored: a failed part).
std::vector<Figure> collectFigures(const ReportInput& in);

nlohmann::json summaryJson(const ReportInput& in, const std::vector<Figure>& figures);

// `pngs`: (file name in the output dir, caption) of the figures made.
std::string reportMarkdown(const ReportInput& in, const std::vector<Figure>& figures,
                           const std::vector<std::pair<std::string, std::string>>& pngs);

// Environment of this run: git revision, CPU, kernel, compiler, libraries.
std::vector<std::pair<std::string, std::string>> environment(const std::string& source);

[[nodiscard]] Status writeResults(const std::string& path, const ReportInput& in);

}  // namespace tide::harness::reproduce
