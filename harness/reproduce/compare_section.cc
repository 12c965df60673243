#include "harness/reproduce/compare_section.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "sim/scenario.h"

namespace tide::harness::reproduce {

namespace {

std::vector<std::string> scenarioFiles(const std::string& source) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  for (const char* dir : {"scenarios", "scenarios/designs"}) {
    std::vector<std::string> here;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(source + "/" + dir, ec)) {
      if (e.is_regular_file() && e.path().extension() == ".toml") here.push_back(e.path());
    }
    std::sort(here.begin(), here.end());
    files.insert(files.end(), here.begin(), here.end());
  }
  return files;
}

std::string partName(const std::string& file) {
  std::string stem = std::filesystem::path(file).stem();
  std::replace(stem.begin(), stem.end(), '-', '_');
  return kComparePrefix + stem;
}

}  // namespace

std::vector<Part> compareParts(const SetOptions& o) {
  std::vector<Part> parts;
  const std::string d = o.partDir + "/";
  for (const auto& file : scenarioFiles(o.source)) {
    const std::string n = partName(file);
    const std::string shown = file.substr(o.source.size() + 1);
    Part p{n,
           "design comparison, simulated: " + shown,
           {o.tide, "sim", "compare", "--scenario", file, "--no-sensitivity", "--json",
            d + n + ".json"},
           30,
           1800,
           "",
           {{"result", d + n + ".json"}},
           {}};
    Result<sim::Scenario> sc = sim::loadScenario(file);
    if (!sc.isOk()) {
      p.skipReason = "scenario does not load: " + sc.status().toString();
    } else {
      const int nodes = sc->trainNodes + sc->inferNodes;
      const int limit = o.quick ? kCompareQuickNodes : kCompareFullNodes;
      if (nodes > limit) {
        p.skipReason = fmt::format(
            "{}{} nodes, over the {} set's limit of {} (minutes of simulation per strategy at "
            "that scale): run alone, `tide sim compare --scenario {}`",
            o.quick && nodes <= kCompareFullNodes ? "quick set: " : "", nodes,
            o.quick ? "quick" : "full", limit, shown);
      }
    }
    parts.push_back(std::move(p));
  }
  return parts;
}

nlohmann::json compareJson(const ReportInput& in) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& r : in.runs) {
    if (r.part.name.rfind(kComparePrefix, 0) != 0) continue;
    nlohmann::json doc = partDocument(in, r.part.name);
    if (!doc.is_object() || doc.value("schema", "") != "tide.sim.compare/1" ||
        !doc["results"].is_array())
      continue;
    nlohmann::json rows = nlohmann::json::array();
    int rank = 0;
    for (const auto& x : doc["results"]) {
      rows.push_back({{"rank", ++rank},
                      {"strategy", x.value("strategy", "")},
                      {"profile", x.value("profile", "")},
                      {"seconds", x.value("seconds", 0.0)},
                      {"band_seconds", x.value("band_seconds", nlohmann::json::array())},
                      {"lower_bound_seconds", x.value("lower_bound_seconds", 0.0)},
                      {"ratio_to_bound", x.value("ratio_to_bound", 0.0)},
                      {"bottleneck", x.value("bottleneck", "")}});
    }
    std::string file;
    for (size_t i = 0; i + 1 < r.part.argv.size(); ++i)
      if (r.part.argv[i] == "--scenario") file = r.part.argv[i + 1];
    if (!in.source.empty() && file.rfind(in.source + "/", 0) == 0)
      file = file.substr(in.source.size() + 1);
    out[r.part.name] = {{"scenario", doc.value("scenario", "")},
                        {"file", file},
                        {"results", rows},
                        {"not_applicable", doc.value("not_applicable", nlohmann::json::array())}};
  }
  return out;
}

std::string compareMarkdown(const nlohmann::json& cmp,
                            const std::vector<std::pair<std::string, std::string>>& pngs) {
  if (!cmp.is_object() || cmp.empty()) return "";
  std::string md =
      "## Design comparison per scenario (simulated)\n\n"
      "`tide sim compare` on each scenario: every strategy that applies, each priced by its own "
      "cost profile, fastest first. Band: every constant of the profile at the low end of its "
      "range, then every one at the high end (docs/designs.md). Lower bound: the plan's bytes "
      "over its bottleneck link.\n\n";
  for (const auto& [part, c] : cmp.items()) {
    md += fmt::format("### {} (`{}`)\n\n", c.value("scenario", part), c.value("file", ""));
    md +=
        "| rank | strategy | profile | predicted s | band s | lower bound s | × bound | bottleneck "
        "|\n|---:|---|---|---:|---|---:|---:|---|\n";
    for (const auto& r : c["results"]) {
      std::string band = r["band_seconds"].is_null() ? "not computed" : "—";
      if (r["band_seconds"].is_array() && r["band_seconds"].size() == 2)
        band = fmt::format("{:.3g} – {:.3g}", r["band_seconds"][0].get<double>(),
                           r["band_seconds"][1].get<double>());
      md += fmt::format("| {} | {} | {} | {:.3g} | {} | {:.3g} | {:.2f} | {} |\n",
                        r["rank"].get<int>(), r["strategy"].get<std::string>(),
                        r["profile"].get<std::string>(), r["seconds"].get<double>(), band,
                        r["lower_bound_seconds"].get<double>(), r["ratio_to_bound"].get<double>(),
                        r["bottleneck"].get<std::string>());
    }
    std::string na;
    for (const auto& x : c["not_applicable"])
      na += fmt::format("{}{} ({})", na.empty() ? "" : "; ", x.value("strategy", "?"),
                        x.value("reason", ""));
    md += na.empty() ? "\n" : "\nNot applicable: " + na + ".\n\n";
    for (const auto& [file, caption] : pngs)
      if (file == part + ".png") md += "![" + caption + "](" + file + ")\n\n";
  }
  return md;
}

}  // namespace tide::harness::reproduce
