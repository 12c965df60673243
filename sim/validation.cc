#include "sim/validation.h"

#include <algorithm>
#include <cmath>

namespace tide::sim {

Status checkSyncSchema(const nlohmann::json& real) {
  const std::string schema =
      real.is_object() && real.contains("schema") && real["schema"].is_string()
          ? real["schema"].get<std::string>()
          : "";
  if (schema == "tide.sync/1") return Status::ok();
  return TIDE_ERROR(Code::kInvalidArgument,
                    "schema is " + (schema.empty() ? std::string("missing") : "'" + schema + "'") +
                        ", want tide.sync/1 (the JSON of tide sync --json)");
}

Result<Validation> compareWithReal(const nlohmann::json& real, double simSeconds, double planBytes,
                                   double threshold) {
  auto bad = [](const std::string& m) {
    return TIDE_ERROR(Code::kInvalidArgument, "real run: " + m);
  };
  if (!real.is_object()) return bad("not a JSON object");
  if (auto st = checkSyncSchema(real); !st.isOk()) return st.withContext("real run");
  if (!real.contains("verified") || !real["verified"].is_boolean() || !real["verified"].get<bool>())
    return bad("not verified (its data was not checked bit-exact)");
  if (!real.contains("steps") || !real["steps"].is_array() || real["steps"].empty())
    return bad("no steps");
  if (simSeconds <= 0) return TIDE_ERROR(Code::kInvalidArgument, "simulated time must be > 0");
  Validation v;
  v.strategy = real.value("strategy", std::string());
  v.threshold = threshold;
  int i = 0;
  for (const auto& s : real["steps"]) {
    if (!s.is_object() || !s.contains("seconds") || !s["seconds"].is_number())
      return bad("step " + std::to_string(i) + " has no seconds");
    double sec = s["seconds"].get<double>();
    if (!(sec > 0)) return bad("step " + std::to_string(i) + " seconds must be > 0");
    if (planBytes > 0 && s.contains("bytes") && s["bytes"].is_number()) {
      // A run counts the network bytes and, apart, the local copies and
      // conversions; the plan's total counts both.
      double b = s["bytes"].get<double>();
      if (s.contains("local_bytes") && s["local_bytes"].is_number())
        b += s["local_bytes"].get<double>();
      if (std::abs(b - planBytes) > 1e-6 * planBytes)
        return bad("step " + std::to_string(i) + " moved " + std::to_string(b) +
                   " bytes but the plan moves " + std::to_string(planBytes));
    }
    ValidationStep st{i, sec, simSeconds, simSeconds / sec - 1};
    v.steps.push_back(st);
    v.meanAbsError += std::abs(st.error);
    v.maxAbsError = std::max(v.maxAbsError, std::abs(st.error));
    ++i;
  }
  v.meanAbsError /= static_cast<double>(v.steps.size());
  v.pass = v.meanAbsError <= threshold;
  return v;
}

nlohmann::json Validation::toJson() const {
  nlohmann::json steps_ = nlohmann::json::array();
  for (const auto& s : steps) {
    steps_.push_back({{"step", s.step},
                      {"real_seconds", s.realSeconds},
                      {"sim_seconds", s.simSeconds},
                      {"error", s.error}});
  }
  return {{"schema", "tide.validate/1"},
          {"strategy", strategy},
          {"steps", steps_},
          {"mean_abs_error", meanAbsError},
          {"max_abs_error", maxAbsError},
          {"threshold", threshold},
          {"pass", pass}};
}

}  // namespace tide::sim
