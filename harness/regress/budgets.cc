#include "harness/regress/budgets.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>

#include "workloads/toml_fields.h"

namespace tide::harness::regress {
namespace {

using workloads::detail::TomlFields;

Status bad(const std::string& path, const std::string& what) {
  return TIDE_ERROR(Code::kInvalidArgument, path + ": " + what);
}

Status readStrings(TomlFields& f, std::string_view key, const std::string& where,
                   std::vector<std::string>& out) {
  const toml::node* n = f.get(key);
  if (n == nullptr) return Status::ok();
  const toml::array* arr = n->as_array();
  if (arr == nullptr) return bad(where, std::string(key) + " must be an array of strings");
  for (const auto& v : *arr) {
    auto s = v.value_exact<std::string>();
    if (!s) return bad(where, std::string(key) + " must be an array of strings");
    out.push_back(*s);
  }
  return Status::ok();
}

Status readTolerance(TomlFields& f, double& out) {
  TIDE_RETURN_IF_ERROR(f.getDouble("tolerance_percent", out, false));
  if (out < 0) return f.error("tolerance_percent", "must not be negative");
  return Status::ok();
}

// [metrics...]: nested tables whose leaves are [baseline, tolerance %].
Status readMetrics(const toml::table& t, const std::string& prefix, const std::string& where,
                   std::map<std::string, MetricBudget>& out) {
  for (auto&& [k, node] : t) {
    const std::string name =
        prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
    if (const toml::table* sub = node.as_table()) {
      TIDE_RETURN_IF_ERROR(readMetrics(*sub, name, where, out));
      continue;
    }
    const toml::array* arr = node.as_array();
    auto base = arr && arr->size() == 2 ? (*arr)[0].value<double>() : std::nullopt;
    auto tol = arr && arr->size() == 2 ? (*arr)[1].value<double>() : std::nullopt;
    if (!base || !tol || !std::isfinite(*base) || !(*tol >= 0))
      return bad(where, "metric " + name + " must be [baseline, tolerance %] (tolerance >= 0)");
    out[name] = MetricBudget{*base, *tol};
  }
  return Status::ok();
}

Status readInputs(const toml::table& t, const std::string& prefix, const std::string& where,
                  std::map<std::string, InputDigests>& out) {
  for (auto&& [k, node] : t) {
    const std::string name =
        prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
    if (const toml::table* sub = node.as_table()) {
      TIDE_RETURN_IF_ERROR(readInputs(*sub, name, where, out));
      continue;
    }
    auto s = node.value_exact<std::string>();
    if (!s) return bad(where, "input digest " + name + " must be a string");
    const auto dot = name.rfind('.');
    if (dot == std::string::npos) return bad(where, "input digest " + name + " has no source");
    out[name.substr(0, dot)][name.substr(dot + 1)] = *s;
  }
  return Status::ok();
}

Status readProfile(const toml::table& t, const std::string& where,
                   std::map<std::string, FunctionProfile>& out) {
  for (auto&& [kernel, node] : t) {
    const toml::table* fns = node.as_table();
    if (fns == nullptr)
      return bad(where, "profile." + std::string(kernel.str()) + " must be a table");
    for (auto&& [k, v] : *fns) {
      const toml::array* arr = v.as_array();
      auto fn = arr && arr->size() == 2 ? (*arr)[0].value_exact<std::string>() : std::nullopt;
      auto ir = arr && arr->size() == 2 ? (*arr)[1].value<double>() : std::nullopt;
      if (!fn || !ir)
        return bad(where, "profile." + std::string(kernel.str()) + "." + std::string(k.str()) +
                              " must be [\"function\", instructions]");
      out[std::string(kernel.str())][*fn] = *ir;
    }
  }
  return Status::ok();
}

// Where the generated part begins: the first line that opens a table under
// metrics, inputs or profile.
size_t generatedStart(const std::string& text) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + pos, end - pos);
    for (std::string_view head : {"[metrics", "[inputs", "[profile"})
      if (line.substr(0, head.size()) == head) return pos;
    pos = end + 1;
  }
  return text.size();
}

// A number as TOML (the subset: no inf/nan) that reads back to the same double.
std::string number(double v) {
  if (v == std::floor(v) && std::fabs(v) < 9e15) return fmt::format("{:.0f}", v);
  std::string s = fmt::format("{:.17g}", v);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

// A string value of the subset: basic without escapes, else literal.
std::optional<std::string> quoted(const std::string& s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f)
      return std::nullopt;
  if (s.find_first_of("\"\\") == std::string::npos) return "\"" + s + "\"";
  if (s.find('\'') == std::string::npos) return "'" + s + "'";
  return std::nullopt;
}

bool bareKey(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  return true;
}

// "a.b.c" with bare parts only.
bool dottedKey(const std::string& s) {
  std::stringstream ss(s);
  std::string part;
  int parts = 0;
  while (std::getline(ss, part, '.')) {
    if (!bareKey(part)) return false;
    ++parts;
  }
  return parts > 0 && s.back() != '.';
}

}  // namespace

Result<Budgets> loadBudgets(const std::string& path) {
  std::ifstream in(path);
  if (!in) return TIDE_ERROR(Code::kNotFound, "cannot read budgets file " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  TIDE_ASSIGN_OR_RETURN(toml::table root, workloads::detail::parseToml(text, path));
  Budgets b;
  b.path = path;
  // Without its trailing blank lines: the writer puts one before each table.
  b.handWritten = text.substr(0, generatedStart(text));
  while (b.handWritten.size() >= 2 && b.handWritten.back() == '\n' &&
         b.handWritten[b.handWritten.size() - 2] == '\n')
    b.handWritten.pop_back();
  TomlFields top(root, path);
  for (const char* key : {"metrics", "inputs", "profile"}) (void)top.get(key);
  if (const toml::node* n = top.get("instructions")) {
    if (!n->as_table()) return bad(path, "[instructions] must be a table");
    TomlFields f(*n->as_table(), path + " [instructions]");
    TIDE_RETURN_IF_ERROR(readTolerance(f, b.irTolerancePercent));
    TIDE_RETURN_IF_ERROR(readStrings(f, "kernels", path, b.kernels));
    TIDE_RETURN_IF_ERROR(f.rejectUnknown());
  }
  if (const toml::node* n = top.get("sim")) {
    if (!n->as_table()) return bad(path, "[sim] must be a table");
    TomlFields f(*n->as_table(), path + " [sim]");
    TIDE_RETURN_IF_ERROR(readTolerance(f, b.simTolerancePercent));
    TIDE_RETURN_IF_ERROR(readStrings(f, "scenarios", path, b.scenarios));
    TIDE_RETURN_IF_ERROR(f.rejectUnknown());
  }
  if (const toml::node* n = top.get("plan")) {
    const toml::array* arr = n->as_array();
    if (arr == nullptr) return bad(path, "plan must be [[plan]] tables");
    for (const auto& item : *arr) {
      if (!item.as_table()) return bad(path, "plan must be [[plan]] tables");
      TomlFields f(*item.as_table(), path + " [[plan]]");
      PlanProblem p;
      TIDE_RETURN_IF_ERROR(f.getString("name", p.name, true));
      TIDE_RETURN_IF_ERROR(f.getString("model", p.model, true));
      TIDE_RETURN_IF_ERROR(f.getInt("scale", p.scale, 1 << 20, false));
      TIDE_RETURN_IF_ERROR(f.getString("train", p.train, true));
      TIDE_RETURN_IF_ERROR(f.getString("infer", p.infer, true));
      TIDE_RETURN_IF_ERROR(f.getString("cluster", p.cluster, true));
      TIDE_RETURN_IF_ERROR(f.getString("strategy", p.strategy, true));
      TIDE_RETURN_IF_ERROR(f.rejectUnknown());
      if (!bareKey(p.name)) return bad(path, "[[plan]] name '" + p.name + "' must be a bare key");
      b.plans.push_back(p);
    }
  }
  TIDE_RETURN_IF_ERROR(top.rejectUnknown());
  if (const toml::node* n = root.get("metrics")) {
    if (!n->as_table()) return bad(path, "[metrics] must be a table");
    TIDE_RETURN_IF_ERROR(readMetrics(*n->as_table(), "", path, b.metrics));
  }
  if (const toml::node* n = root.get("inputs")) {
    if (!n->as_table()) return bad(path, "[inputs] must be a table");
    TIDE_RETURN_IF_ERROR(readInputs(*n->as_table(), "", path, b.inputs));
  }
  if (const toml::node* n = root.get("profile")) {
    if (!n->as_table()) return bad(path, "[profile] must be a table");
    TIDE_RETURN_IF_ERROR(readProfile(*n->as_table(), path, b.profile));
  }
  return b;
}

Status writeBudgets(const Budgets& b, const std::string& path) {
  std::string out = b.handWritten;
  if (!out.empty() && out.back() != '\n') out += "\n";
  // Metrics grouped by their name without its last part: one table each.
  std::map<std::string, std::vector<std::pair<std::string, MetricBudget>>> groups;
  for (const auto& [name, m] : b.metrics) {
    if (!m.baseline) continue;
    if (!std::isfinite(*m.baseline))
      return TIDE_ERROR(Code::kInvalidArgument, "metric " + name + " is not finite");
    const auto dot = name.rfind('.');
    if (dot == std::string::npos || !dottedKey(name))
      return TIDE_ERROR(Code::kInternal, "metric name '" + name + "' is not a dotted bare key");
    groups[name.substr(0, dot)].push_back({name.substr(dot + 1), m});
  }
  for (const auto& [group, rows] : groups) {
    out += "\n[metrics." + group + "]\n";
    for (const auto& [leaf, m] : rows)
      out += leaf + " = [" + number(*m.baseline) + ", " + number(m.tolerancePercent) + "]\n";
  }
  for (const auto& [source, digests] : b.inputs) {
    if (!dottedKey(source)) return TIDE_ERROR(Code::kInternal, "bad input source " + source);
    out += "\n[inputs." + source + "]\n";
    for (const auto& [part, digest] : digests) {
      auto q = quoted(digest);
      if (!bareKey(part) || !q) return TIDE_ERROR(Code::kInternal, "bad input digest " + part);
      out += part + " = " + *q + "\n";
    }
  }
  for (const auto& [kernel, fns] : b.profile) {
    if (!bareKey(kernel)) return TIDE_ERROR(Code::kInternal, "bad kernel name " + kernel);
    // Largest first.
    std::vector<std::pair<double, std::string>> sorted;
    for (const auto& [fn, ir] : fns) sorted.push_back({-ir, fn});
    std::sort(sorted.begin(), sorted.end());
    out += "\n[profile." + kernel + "]\n";
    int i = 0;
    for (const auto& [neg, fn] : sorted) {
      auto q = quoted(fn);
      if (!q) continue;  // a name the subset cannot hold: left out of the profile
      out += fmt::format("f{:02d} = [{}, {}]\n", ++i, *q, number(-neg));
    }
  }
  std::ofstream f(path, std::ios::trunc);
  f << out;
  f.close();
  if (!f) return TIDE_ERROR(Code::kUnavailable, "cannot write " + path);
  return Status::ok();
}

}  // namespace tide::harness::regress
