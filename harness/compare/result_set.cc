#include "harness/compare/result_set.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace tide::harness {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

Status addGoogleBenchmark(const json& doc, const std::string& prefix, ResultSet& out) {
  for (const auto& b : doc.at("benchmarks")) {
    if (b.value("run_type", "iteration") != "iteration") continue;  // skip mean/median rows
    if (b.contains("error_occurred") && b["error_occurred"].get<bool>()) continue;
    std::string name = prefix + b.value("run_name", b.value("name", "?"));
    if (b.contains("real_time")) {
      Metric& m = out.metrics[name + "/real_time"];
      m.unit = b.value("time_unit", "ns");
      m.higherIsBetter = false;
      m.values.push_back(b["real_time"].get<double>());
    }
    if (b.contains("bytes_per_second")) {
      Metric& m = out.metrics[name + "/bytes_per_second"];
      m.unit = "B/s";
      m.higherIsBetter = true;
      m.values.push_back(b["bytes_per_second"].get<double>());
    }
  }
  return Status::ok();
}

Status addTideSamples(const json& doc, const std::string& prefix, ResultSet& out) {
  for (const auto& [name, s] : doc.at("samples").items()) {
    if (!s.is_object() || !s.contains("values") || !s["values"].is_array())
      return TIDE_ERROR(Code::kInvalidArgument, "samples." + name + " has no 'values' array");
    Metric& m = out.metrics[prefix + name];
    m.unit = s.value("unit", "");
    std::string better = s.value("better", "lower");
    if (better != "higher" && better != "lower")
      return TIDE_ERROR(Code::kInvalidArgument,
                        "samples." + name + ".better must be 'higher' or 'lower'");
    m.higherIsBetter = better == "higher";
    for (const auto& v : s["values"]) {
      if (!v.is_number())
        return TIDE_ERROR(Code::kInvalidArgument, "samples." + name + " holds a non-number");
      m.values.push_back(v.get<double>());
    }
  }
  return Status::ok();
}

Status addFile(const fs::path& file, const std::string& prefix, ResultSet& out) {
  std::ifstream in(file);
  if (!in) return TIDE_ERROR(Code::kNotFound, "cannot open " + file.string());
  json doc = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded())
    return TIDE_ERROR(Code::kInvalidArgument, file.string() + ": not valid JSON");
  try {
    if (doc.contains("benchmarks")) return addGoogleBenchmark(doc, prefix, out);
    if (doc.contains("samples")) return addTideSamples(doc, prefix, out);
  } catch (const json::exception& e) {
    return TIDE_ERROR(Code::kInvalidArgument, file.string() + ": " + e.what());
  }
  return TIDE_ERROR(Code::kInvalidArgument,
                    file.string() +
                        ": neither Google Benchmark JSON ('benchmarks') nor a tide result with "
                        "'samples'");
}

}  // namespace

Result<ResultSet> loadResultSet(const std::string& path) {
  ResultSet out;
  out.label = path;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(path, ec))
      if (e.path().extension() == ".json") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    if (files.empty()) return TIDE_ERROR(Code::kNotFound, "no *.json result files in " + path);
    for (const auto& f : files) {
      // Files without samples (plain summaries) are skipped in a directory.
      Status s = addFile(f, f.stem().string() + ":", out);
      if (!s.isOk() && s.code() != Code::kInvalidArgument) return s;
    }
  } else if (fs::exists(path, ec)) {
    TIDE_RETURN_IF_ERROR(addFile(path, "", out));
  } else {
    return TIDE_ERROR(Code::kNotFound, "no such file or directory: " + path);
  }
  if (out.metrics.empty()) return TIDE_ERROR(Code::kInvalidArgument, "no metrics found in " + path);
  return out;
}

}  // namespace tide::harness
