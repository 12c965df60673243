#pragma once
// The design comparison in `tide reproduce`: one part per scenario of
// scenarios/ and scenarios/designs/ runs `tide sim compare` on it (every
// strategy that applies, each priced by its own profile, with the band from
// its constants' ranges), and the report shows each ranked table; the plot
// script draws one figure per scenario (compare_<part>.png).

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/reproduce/part.h"
#include "harness/reproduce/report.h"

namespace tide::harness::reproduce {

inline constexpr const char* kComparePrefix = "compare_";
// Nodes (training + inference) up to which a scenario is compared: the quick
// set's limit and the full set's; larger scenarios are skipped with the
// command to run alone (their simulations take minutes to hours per strategy).
inline constexpr int kCompareQuickNodes = 48;
inline constexpr int kCompareFullNodes = 64;

// The compare parts of the set, one per scenario file, sorted by path.
std::vector<Part> compareParts(const SetOptions& o);

// {"<part>": {"scenario", "file", "results": [{rank, strategy, profile, seconds,
// band_seconds, lower_bound_seconds, ratio_to_bound, bottleneck}],
// "not_applicable": [..]}} for every compare part that wrote a
// tide.sim.compare/1 document; empty object when none did.
nlohmann::json compareJson(const ReportInput& in);

// The REPORT.md section ("" when compareJson is empty); `pngs` as for
// reportMarkdown: a scenario's figure, when made, goes under its table.
std::string compareMarkdown(const nlohmann::json& cmp,
                            const std::vector<std::pair<std::string, std::string>>& pngs = {});

}  // namespace tide::harness::reproduce
