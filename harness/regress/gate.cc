#include "harness/regress/gate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace tide::harness::regress {
namespace {

constexpr double kExactRelative = 1e-9;
// Functions kept in a kernel's profile: at least this share of its
// instructions, at most kProfileFunctions of them.
constexpr double kProfileShare = 0.005;
constexpr size_t kProfileFunctions = 12;

bool isInstructions(const std::string& metric) {
  return metric.rfind("ir.", 0) == 0;
}

// "sim.<scenario>" of "sim.<scenario>.<strategy>.update_s", "plan.<name>" of
// "plan.<name>.moves".
std::string sourceOf(const std::string& metric) {
  const auto first = metric.find('.');
  if (first == std::string::npos) return metric;
  const auto second = metric.find('.', first + 1);
  return second == std::string::npos ? metric : metric.substr(0, second);
}

std::string count(double v) {
  std::string s = fmt::format("{:.0f}", std::fabs(v));
  for (int i = int(s.size()) - 3; i > 0; i -= 3) s.insert(size_t(i), ",");
  return (v < 0 ? "-" : "+") + s;
}

std::string inputsCause(const Budgets& b, const Measurement& m, const std::string& metric) {
  const std::string src = sourceOf(metric);
  auto was = b.inputs.find(src);
  auto now = m.inputs.find(src);
  if (was == b.inputs.end() || now == m.inputs.end())
    return "no recorded input digests for " + src + ": cause unknown";
  std::vector<std::string> changed;
  for (const auto& [part, d] : now->second) {
    auto it = was->second.find(part);
    if (it == was->second.end() || it->second != d) changed.push_back(part);
  }
  if (changed.empty()) return "inputs of " + src + " unchanged: the code changed the result";
  std::string s = "inputs of " + src + " changed: ";
  for (size_t i = 0; i < changed.size(); ++i) s += (i ? ", " : "") + changed[i];
  return s;
}

// Instruction counts hold for one build environment: say so when this run's
// differs from the one the baselines were recorded in.
std::string environmentNote(const Budgets& b, const Measurement& m) {
  auto was = b.inputs.find(kEnvironmentSource);
  auto now = m.inputs.find(kEnvironmentSource);
  if (was == b.inputs.end() || now == m.inputs.end()) return "";
  std::string diff;
  for (const auto& [part, v] : now->second) {
    auto it = was->second.find(part);
    const std::string old = it == was->second.end() ? "?" : it->second;
    if (old != v) diff += (diff.empty() ? "" : "; ") + part + ": " + old + " -> " + v;
  }
  if (diff.empty()) return "";
  return "the baselines were recorded in another build environment (" + diff +
         "): counts are not portable, record this one's with --update; ";
}

std::string instructionsCause(const Budgets& b, const Measurement& m, const std::string& metric,
                              bool up) {
  const std::string kernel = metric.substr(3);
  std::string s = environmentNote(b, m);
  if (m.planted) s += "a planted slowdown ran (TIDE_KERNELS_PLANT); ";
  auto was = b.profile.find(kernel);
  auto now = m.profile.find(kernel);
  if (was == b.profile.end() || now == m.profile.end())
    return s + "no baseline profile of " + kernel;
  // The functions of the baseline profile that moved most in this direction.
  std::vector<std::pair<double, std::string>> moved;
  for (const auto& [fn, base] : was->second) {
    auto it = now->second.find(fn);
    const double delta = (it == now->second.end() ? 0 : it->second) - base;
    if ((up && delta > 0) || (!up && delta < 0)) moved.push_back({-std::fabs(delta), fn});
  }
  // And functions large now that the baseline profile did not list.
  double total = 0;
  for (const auto& [fn, ir] : now->second) total += ir;
  for (const auto& [fn, ir] : now->second)
    if (up && !was->second.count(fn) && ir >= total * 0.02) moved.push_back({-ir, fn});
  std::sort(moved.begin(), moved.end());
  if (moved.empty()) return s + "no function of the baseline profile moved this way";
  s += "largest moves: ";
  for (size_t i = 0; i < moved.size() && i < 3; ++i) {
    const auto& fn = moved[i].second;
    auto base = was->second.find(fn);
    const double delta = up ? -moved[i].first : moved[i].first;
    s += (i ? "; " : "") + fn + " " + count(delta) + " Ir";
    if (base != was->second.end() && base->second > 0)
      s += fmt::format(" ({:+.1f}%)", 100.0 * delta / base->second);
    else
      s += " (not in the baseline profile)";
  }
  return s;
}

}  // namespace

const char* verdictName(Verdict v) {
  switch (v) {
    case Verdict::kOk:
      return "ok";
    case Verdict::kImproved:
      return "improved";
    case Verdict::kRegressed:
      return "REGRESSED";
    case Verdict::kChanged:
      return "CHANGED";
    case Verdict::kNew:
      return "NO BASELINE";
    case Verdict::kMissing:
      return "NOT MEASURED";
  }
  return "?";
}

bool fails(Verdict v) {
  return v != Verdict::kOk && v != Verdict::kImproved;
}

double defaultTolerance(const Budgets& b, const std::string& metric) {
  if (isInstructions(metric)) return b.irTolerancePercent;
  if (metric.rfind("sim.", 0) == 0) return b.simTolerancePercent;
  return b.planTolerancePercent;
}

std::vector<GateRow> judge(const Budgets& b, const Measurement& m,
                           const std::function<bool(const std::string&)>& selected) {
  std::vector<GateRow> rows;
  std::set<std::string> seen;
  for (const auto& f : m.figures) {
    seen.insert(f.name);
    GateRow r;
    r.name = f.name;
    r.unit = f.unit;
    r.measured = f.value;
    auto it = b.metrics.find(f.name);
    if (it == b.metrics.end() || !it->second.baseline) {
      r.tolerancePercent =
          it == b.metrics.end() ? defaultTolerance(b, f.name) : it->second.tolerancePercent;
      r.verdict = Verdict::kNew;
      r.cause = "no baseline: record one with `tide regress check --update`";
      rows.push_back(r);
      continue;
    }
    const double base = *it->second.baseline;
    r.baseline = base;
    r.tolerancePercent = it->second.tolerancePercent;
    r.changePercent = base != 0 ? 100.0 * (f.value - base) / std::fabs(base)
                                : (f.value == 0 ? 0 : std::copysign(INFINITY, f.value));
    const double limit = r.tolerancePercent > 0 ? r.tolerancePercent : 100.0 * kExactRelative;
    const bool beyond =
        std::fabs(f.value - base) > limit / 100.0 * std::fabs(base) || (base == 0 && f.value != 0);
    if (!beyond) {
      r.verdict = Verdict::kOk;
    } else if (isInstructions(f.name)) {
      const bool up = f.value > base;
      r.verdict = up ? Verdict::kRegressed : Verdict::kImproved;
      r.cause = instructionsCause(b, m, f.name, up);
      if (!up) r.cause = "fewer instructions: `--update` locks the gain in; " + r.cause;
    } else {
      r.verdict = Verdict::kChanged;
      r.cause = inputsCause(b, m, f.name);
    }
    rows.push_back(r);
  }
  for (const auto& [name, mb] : b.metrics) {
    if (seen.count(name) || !selected(name) || !mb.baseline) continue;
    GateRow r;
    r.name = name;
    r.baseline = mb.baseline;
    r.tolerancePercent = mb.tolerancePercent;
    r.verdict = Verdict::kMissing;
    r.cause = "in the budgets file but not measured (a kernel, strategy or figure gone?)";
    rows.push_back(r);
  }
  return rows;
}

Budgets updated(const Budgets& b, const Measurement& m,
                const std::function<bool(const std::string&)>& selected) {
  Budgets u = b;
  std::set<std::string> measured;
  for (const auto& f : m.figures) measured.insert(f.name);
  for (auto it = u.metrics.begin(); it != u.metrics.end();)
    it = selected(it->first) && !measured.count(it->first) ? u.metrics.erase(it) : std::next(it);
  for (const auto& f : m.figures) {
    auto it = u.metrics.find(f.name);
    const double tol =
        it != u.metrics.end() ? it->second.tolerancePercent : defaultTolerance(b, f.name);
    u.metrics[f.name] = MetricBudget{f.value, tol};
  }
  for (const auto& [src, d] : m.inputs) u.inputs[src] = d;
  for (const auto& [kernel, fns] : m.profile) {
    double total = 0;
    for (const auto& [fn, ir] : fns) total += ir;
    std::vector<std::pair<double, std::string>> top;
    for (const auto& [fn, ir] : fns)
      if (ir >= total * kProfileShare) top.push_back({-ir, fn});
    std::sort(top.begin(), top.end());
    if (top.size() > kProfileFunctions) top.resize(kProfileFunctions);
    FunctionProfile p;
    for (const auto& [neg, fn] : top) p[fn] = -neg;
    u.profile[kernel] = p;
  }
  return u;
}

}  // namespace tide::harness::regress
