#include "harness/reproduce/crossval_section.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "workloads/toml_fields.h"

namespace tide::harness::reproduce {

std::vector<std::string> crossvalArgs(const std::string& source, std::string* why) {
  const std::string path = source + "/results/budgets/sim-crossval.toml";
  std::ifstream f(path);
  std::stringstream text;
  text << f.rdbuf();
  Result<toml::table> r = f ? workloads::detail::parseToml(text.str(), path)
                            : Result<toml::table>(TIDE_ERROR(Code::kNotFound, "cannot read"));
  if (!r.isOk()) {
    *why = "no crossval settings: " + path + ": " + r.status().toString();
    return {};
  }
  const toml::table& t = *r;
  auto profile = t["profile"].value<std::string>();
  auto grid = t["grid"].value<int64_t>();
  const toml::array* scenarios = t["scenarios"].as_array();
  const toml::array* free = t["free"].as_array();
  if (!profile || !grid || !scenarios || !free || scenarios->empty() || free->empty()) {
    *why = "no crossval settings: " + path + " lacks profile, scenarios, free or grid";
    return {};
  }
  std::vector<std::string> args{"--profile", *profile, "--scenarios"};
  for (const auto& s : *scenarios) args.push_back(source + "/" + s.value_or(std::string()));
  std::string keys;
  for (const auto& f : *free) keys += (keys.empty() ? "" : ",") + f.value_or(std::string());
  args.insert(args.end(), {"--free", keys, "--grid", std::to_string(*grid)});
  return args;
}

nlohmann::json crossvalJson(const ReportInput& in) {
  nlohmann::json doc = partDocument(in, kCrossvalPart);
  if (!doc.is_object() || doc.value("schema", "") != "tide.sim.crossval/1" ||
      !doc.contains("rows") || !doc.contains("in_sample"))
    return nullptr;
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& h : doc["rows"]) {
    nlohmann::json row{{"name", h["name"]},
                       {"strategy", h["strategy"]},
                       {"published_s", h["published_s"]},
                       {"held_out_s", h["predicted_s"]},
                       {"held_out_error", h["error"]}};
    for (const auto& s : doc["in_sample"]["rows"]) {
      if (s["name"] == h["name"] && s["strategy"] == h["strategy"]) {
        row["in_sample_s"] = s["predicted_s"];
        row["in_sample_error"] = s["error"];
      }
    }
    rows.push_back(row);
  }
  nlohmann::json free = nlohmann::json::array();
  for (const auto& f : doc.value("free", nlohmann::json::array())) free.push_back(f["key"]);
  return {{"rows", rows},
          {"free", free},
          {"grid_points", doc.value("grid_points", 0)},
          {"held_out",
           {{"mean_abs_error", doc["mean_abs_error"]}, {"max_abs_error", doc["max_abs_error"]}}},
          {"in_sample",
           {{"mean_abs_error", doc["in_sample"]["mean_abs_error"]},
            {"max_abs_error", doc["in_sample"]["max_abs_error"]}}},
          {"winner_right", doc["winner_right"]},
          {"rows_total", doc["rows_total"]}};
}

std::string crossvalMarkdown(const nlohmann::json& cv) {
  if (!cv.is_object()) return "";
  std::string free;
  for (const auto& f : cv["free"]) free += (free.empty() ? "" : ", ") + f.get<std::string>();
  std::string md =
      "## Simulator on the published runs: held out beside in sample\n\n" +
      fmt::format(
          "Free constants {} (grid {} per constant within each constant's range). *Held out*: "
          "each scenario predicted with the constants fitted on the other scenarios' rows only "
          "(leave-one-out); *in sample*: every row at one fit on all rows, itself included. "
          "The held-out error is the one that counts. Error = predicted / published - 1.\n\n",
          free, cv.value("grid_points", 0));
  md +=
      "| row | strategy | published s | held-out s | error | in-sample s | error |\n"
      "|---|---|---:|---:|---:|---:|---:|\n";
  auto pct = [](const nlohmann::json& v) {
    return v.is_number() ? fmt::format("{:+.1f} %", 100 * v.get<double>()) : std::string("—");
  };
  auto sec = [](const nlohmann::json& v) {
    return v.is_number() ? fmt::format("{:.3f}", v.get<double>()) : std::string("—");
  };
  for (const auto& r : cv["rows"]) {
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", r["name"].get<std::string>(),
                      r["strategy"].get<std::string>(), sec(r["published_s"]), sec(r["held_out_s"]),
                      pct(r["held_out_error"]), sec(r.value("in_sample_s", nlohmann::json())),
                      pct(r.value("in_sample_error", nlohmann::json())));
  }
  md +=
      "\n| strategy | held-out mean \\|error\\| | held-out max | in-sample mean | in-sample max "
      "|\n|---|---:|---:|---:|---:|\n";
  const auto& ho = cv["held_out"];
  const auto& is = cv["in_sample"];
  for (const auto& [kind, mean] : ho["mean_abs_error"].items()) {
    auto at = [&](const nlohmann::json& j) {
      return j.contains(kind) && j[kind].is_number()
                 ? fmt::format("{:.1f} %", 100 * j[kind].get<double>())
                 : std::string("—");
    };
    md += fmt::format("| {} | {} | {} | {} | {} |\n", kind, at(ho["mean_abs_error"]),
                      at(ho["max_abs_error"]), at(is["mean_abs_error"]), at(is["max_abs_error"]));
  }
  md += fmt::format(
      "\nFaster strategy right (held out): {} of {} scenarios. Budget of the regression gate: "
      "results/budgets/sim-crossval.toml.\n\n",
      cv.value("winner_right", 0), cv.value("rows_total", 0));
  return md;
}

}  // namespace tide::harness::reproduce
