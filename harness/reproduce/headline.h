#pragma once
// The headline of `tide reproduce`: p2p vs broadcast on a Kimi-K2-shaped
// model (scaled down) run for real on the emulated cluster, every byte
// verified, beside the plan's lower bounds, the simulator's prediction of
// the same plan on the same cluster spec, the full-scale Kimi-K2 simulation
// and the published figures. One table opens REPORT.md; summary.json keeps
// it under "headline".

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/reproduce/part.h"
#include "harness/reproduce/report.h"

namespace tide::harness::reproduce {

// What the headline's real run is: one workload, both strategies.
struct HeadlineSetup {
  std::string model;
  int scale = 1;
  std::string train, infer, cluster, bucket, chunk;
  int steps = 1;
  // The flags `tide plan` and `tide sync` share (model, layouts, bucket, chunk).
  std::vector<std::string> workloadArgs() const;
};

// Kimi-K2 / 128 on 8 emulated nodes at 100 Mbit/s (docs/reproduce.md says
// why); `tiny`: tiny-moe on 4 nodes at 400 Mbit/s, seconds, for tests (too
// small to show the phenomenon: its times are overheads).
HeadlineSetup headlineSetup(bool tiny);

inline constexpr const char* kHeadlineStrategies[] = {"broadcast", "p2p"};
// Drawn by harness/plots/reproduce.py; shown under the headline table.
inline constexpr const char* kHeadlineFigure = "timeline_headline.png";

// The headline's parts, in run order: both plans, both real runs of those
// plans (`tide sync --plan`; skipped with `netnsSkip` when not empty), both
// predictions of the same plans (`tide sim --plan`).
void addHeadlineParts(const SetOptions& o, const std::string& netnsSkip, std::vector<Part>& parts);

// summary.json "headline": every figure read from the parts' documents; a
// side that did not run is null beside its reason.
nlohmann::json headlineJson(const ReportInput& in);

// The table that opens REPORT.md, made from headlineJson().
std::string headlineMarkdown(const nlohmann::json& headline);

}  // namespace tide::harness::reproduce
