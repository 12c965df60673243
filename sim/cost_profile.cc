#include "sim/cost_profile.h"

#include <fstream>
#include <sstream>

#include "sim/embedded_profiles.h"
#include "workloads/toml_fields.h"

namespace tide::sim {
namespace {

using workloads::detail::invalidAt;
using workloads::detail::TomlFields;

// The constants a profile must give, with the unit each may be written in.
struct Known {
  const char* key;
  double Calibration::*field;
};
constexpr Known kKnown[] = {
    {"host_op", &Calibration::hostOpSeconds},
    {"py_step", &Calibration::pyStepSeconds},
    {"engine_call", &Calibration::engineCallSeconds},
    {"mla_requant", &Calibration::mlaRequantSeconds},
    {"register_page", &Calibration::registerPerPageSeconds},
    {"lock_poll", &Calibration::lockPollSeconds},
};

Result<double> unitSeconds(const std::string& unit) {
  if (unit == "s") return 1.0;
  if (unit == "ms") return 1e-3;
  if (unit == "us") return 1e-6;
  if (unit == "ns") return 1e-9;
  return TIDE_ERROR(Code::kInvalidArgument, "unit '" + unit + "' is not one of s, ms, us, ns");
}

Result<ConstantLabel> parseLabel(const std::string& s) {
  for (ConstantLabel l : {ConstantLabel::kDatasheet, ConstantLabel::kMicroBenchmark,
                          ConstantLabel::kFittedOn, ConstantLabel::kEstimate})
    if (s == constantLabelName(l)) return l;
  return TIDE_ERROR(
      Code::kInvalidArgument,
      "label '" + s + "' is not one of datasheet, micro-benchmark, fitted-on, estimate");
}

Result<CostConstant> parseConstant(const toml::table& t, const std::string& key,
                                   const std::string& origin) {
  TomlFields f(t, origin + " [" + key + "]");
  CostConstant c;
  c.key = key;
  double value = 0;
  std::string unit, label;
  TIDE_RETURN_IF_ERROR(f.getDouble("value", value, true));
  TIDE_RETURN_IF_ERROR(f.getString("unit", unit, true));
  TIDE_RETURN_IF_ERROR(f.getString("label", label, true));
  TIDE_RETURN_IF_ERROR(f.getString("source", c.source, true));
  TIDE_RETURN_IF_ERROR(f.getString("command", c.command, false));
  double low = -1, high = -1;
  TIDE_RETURN_IF_ERROR(f.getDouble("low", low, false));
  TIDE_RETURN_IF_ERROR(f.getDouble("high", high, false));
  if (const toml::node* rows = f.get("rows")) {
    const toml::array* a = rows->as_array();
    if (!a) return f.error("rows", "must be an array of \"scenario/strategy[/span]\" strings");
    for (const auto& r : *a) {
      auto v = r.value<std::string>();
      if (!v) return f.error("rows", "must hold strings");
      c.rows.push_back(*v);
    }
  }
  if (const toml::node* res = f.get("residuals")) {
    const toml::array* a = res->as_array();
    if (!a) return f.error("residuals", "must be an array of numbers, one per row of rows");
    for (const auto& e : *a) {
      auto v = e.value<double>();
      if (!v) return f.error("residuals", "must hold numbers");
      c.residuals.push_back(*v);
    }
    if (c.residuals.size() != c.rows.size())
      return f.error("residuals", "must give one error per row of rows");
  }
  TIDE_RETURN_IF_ERROR(f.rejectUnknown());
  if (!(value >= 0)) return f.error("value", "must be >= 0");
  auto scale = unitSeconds(unit);
  if (!scale.isOk()) return f.error("unit", scale.status().message());
  c.seconds = value * *scale;
  c.unit = unit;
  if ((low >= 0) != (high >= 0))
    return f.error(low >= 0 ? "high" : "low", "low and high go together");
  if (low >= 0) {
    if (!(low <= value && value <= high))
      return f.error("low", "the range must hold the value: low <= value <= high");
    c.lowSeconds = low * *scale;
    c.highSeconds = high * *scale;
  } else if (low != -1 || high != -1) {
    return f.error("low", "must be >= 0");
  }
  auto l = parseLabel(label);
  if (!l.isOk()) return f.error("label", l.status().message());
  c.label = *l;
  if (c.label == ConstantLabel::kMicroBenchmark && c.command.empty())
    return f.error("command", "a micro-benchmark constant names the command that measured it");
  if (c.label == ConstantLabel::kFittedOn && c.rows.empty())
    return f.error("rows", "a fitted-on constant names the rows it was fitted on");
  if (c.source.empty()) return f.error("source", "must say where the value comes from");
  return c;
}

}  // namespace

const char* constantLabelName(ConstantLabel l) {
  switch (l) {
    case ConstantLabel::kDatasheet:
      return "datasheet";
    case ConstantLabel::kMicroBenchmark:
      return "micro-benchmark";
    case ConstantLabel::kFittedOn:
      return "fitted-on";
    case ConstantLabel::kEstimate:
      return "estimate";
  }
  return "?";
}

const CostConstant* CostProfile::find(std::string_view key) const {
  for (const auto& c : constants)
    if (c.key == key) return &c;
  return nullptr;
}

Result<CostProfile> parseProfile(std::string_view text, std::string_view origin) {
  TIDE_ASSIGN_OR_RETURN(toml::table t, workloads::detail::parseToml(text, origin));
  const std::string where(origin);
  TomlFields top(t, where);
  CostProfile p;
  TIDE_RETURN_IF_ERROR(top.getString("name", p.name, true));
  TIDE_RETURN_IF_ERROR(top.getString("stack", p.stack, true));
  TIDE_RETURN_IF_ERROR(top.getString("version", p.version, true));
  for (const Known& k : kKnown) {
    const toml::node* n = top.get(k.key);
    if (!n) return invalidAt(origin, std::string("missing [") + k.key + "]");
    if (!n->is_table()) return top.error(k.key, std::string("must be a table [") + k.key + "]");
    TIDE_ASSIGN_OR_RETURN(CostConstant c, parseConstant(*n->as_table(), k.key, where));
    p.calib.*k.field = c.seconds;
    p.constants.push_back(std::move(c));
  }
  TIDE_RETURN_IF_ERROR(top.rejectUnknown());
  return p;
}

Result<CostProfile> loadProfile(std::string_view nameOrPath) {
  for (size_t i = 0; i < detail::kEmbeddedProfileCount; ++i) {
    const auto& e = detail::kEmbeddedProfiles[i];
    if (nameOrPath == e.name)
      return parseProfile(e.text, "profiles/" + std::string(e.name) + ".toml");
  }
  std::ifstream in{std::string(nameOrPath)};
  if (!in) {
    std::string names;
    for (const auto& n : profileNames()) names += (names.empty() ? "" : ", ") + n;
    return TIDE_ERROR(Code::kNotFound, "cost profile '" + std::string(nameOrPath) +
                                           "' is neither a shipped profile (" + names +
                                           ") nor a readable file");
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return parseProfile(ss.str(), nameOrPath);
}

double calibrationSeconds(const Calibration& k, std::string_view key) {
  for (const Known& c : kKnown)
    if (key == c.key) return k.*c.field;
  return 0;
}

bool setCalibrationSeconds(Calibration& k, std::string_view key, double seconds) {
  for (const Known& c : kKnown)
    if (key == c.key) {
      k.*c.field = seconds;
      return true;
    }
  return false;
}

Result<double> profileUnitSeconds(const std::string& unit) {
  return unitSeconds(unit);
}

std::vector<std::string> profileNames() {
  std::vector<std::string> out;
  for (size_t i = 0; i < detail::kEmbeddedProfileCount; ++i)
    if (*detail::kEmbeddedProfiles[i].name) out.push_back(detail::kEmbeddedProfiles[i].name);
  return out;
}

}  // namespace tide::sim
