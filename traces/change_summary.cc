#include "traces/change_summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "workloads/tensor.h"

namespace tide::traces {

namespace {

constexpr double kZ95 = 1.96;

// Figures over the tensors in `members` (indices into the tensor table).
KindChange summarizeGroup(const TraceData& d, const std::vector<uint32_t>& members) {
  const auto& c = d.delta;
  KindChange k;
  k.tensors = members.size();
  double total = 0, ever = 0, var = 0;
  for (uint32_t t : members) total += static_cast<double>(d.tensors.numel[t]);
  k.params = static_cast<uint64_t>(total);
  if (total <= 0) return k;
  for (uint32_t t : members) {
    const double w = static_cast<double>(d.tensors.numel[t]) / total;
    const double n = static_cast<double>(c.checked[t]);
    if (n > 0) {
      ever += w * static_cast<double>(c.everChanged[t]) / n;
      var += w * w / n;
    }
  }
  k.everChanged = ever;
  k.halfWidth95 = c.exact ? 0 : kZ95 * 0.5 * std::sqrt(var);
  k.minStep = 1;
  double sum = 0;
  for (int s = 1; s <= c.steps; ++s) {
    double f = 0;
    for (uint32_t t : members) {
      f += c.fraction(s, t) * static_cast<double>(d.tensors.numel[t]) / total;
    }
    sum += f;
    k.minStep = std::min(k.minStep, f);
    k.maxStep = std::max(k.maxStep, f);
  }
  if (c.steps > 0) k.changedPerStep = sum / c.steps;
  if (c.steps == 0) k.minStep = 0;
  return k;
}

ExpertChange summarizeExperts(const TraceData& d) {
  ExpertChange e;
  const auto& r = d.routing;
  const auto& c = d.delta;
  if (r.empty() || c.steps == 0) return e;
  // Tensors of each (MoE layer, expert).
  std::map<std::pair<int, int>, std::vector<uint32_t>> cellTensors;
  for (uint32_t t = 0; t < d.tensors.size(); ++t) {
    if (d.tensors.kind[t] != static_cast<uint8_t>(workloads::TensorKind::kRoutedExpert)) continue;
    const int l = d.tensors.layer[t] - r.firstMoeLayer;
    const int x = d.tensors.expert[t];
    if (l < 0 || l >= r.moeLayers || x < 0 || x >= r.experts) continue;
    cellTensors[{l, x}].push_back(t);
  }
  if (cellTensors.empty()) return e;
  std::vector<double> active;
  double idleSum = 0, maxN = 0, minN = -1;
  const int steps = std::min(c.steps, r.steps);
  for (const auto& [key, ts] : cellTensors) {
    double n = 0;
    for (uint32_t t : ts) n += static_cast<double>(c.checked[t]);
    if (n <= 0) continue;
    maxN = std::max(maxN, n);
    minN = minN < 0 ? n : std::min(minN, n);
    for (int s = 1; s <= steps; ++s) {
      double changed = 0;
      for (uint32_t t : ts) {
        changed += c.changedSampled[static_cast<size_t>(s - 1) * d.tensors.size() + t];
      }
      const double f = changed / n;
      ++e.cells;
      if (r.tokens(s - 1, key.first, key.second) == 0) {
        ++e.idleCells;
        idleSum += f;
      } else {
        active.push_back(f);
      }
    }
  }
  if (e.idleCells > 0) e.idleChanged = idleSum / static_cast<double>(e.idleCells);
  if (!active.empty()) {
    std::sort(active.begin(), active.end());
    double sum = 0;
    for (double f : active) sum += f;
    e.activeMean = sum / static_cast<double>(active.size());
    auto q = [&](double p) {
      return active[static_cast<size_t>(p * static_cast<double>(active.size() - 1) + 0.5)];
    };
    e.p10 = q(0.1);
    e.median = q(0.5);
    e.p90 = q(0.9);
    e.max = active.back();
  }
  e.cellHalfWidth95 = c.exact || minN <= 0 ? 0 : kZ95 * 0.5 / std::sqrt(minN);
  return e;
}

std::string pct(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f %%", 100.0 * f);
  return buf;
}

}  // namespace

ChangeSummary summarizeChanges(const TraceData& d) {
  ChangeSummary s;
  s.exact = d.delta.exact;
  s.samplePerTensor = d.delta.samplePerTensor;
  std::map<uint8_t, std::vector<uint32_t>> byKind;
  std::vector<uint32_t> all;
  for (uint32_t t = 0; t < d.tensors.size(); ++t) {
    byKind[d.tensors.kind[t]].push_back(t);
    all.push_back(t);
  }
  for (const auto& [kind, members] : byKind) {
    KindChange k = summarizeGroup(d, members);
    k.kind = workloads::kindName(static_cast<workloads::TensorKind>(kind));
    s.kinds.push_back(std::move(k));
  }
  s.total = summarizeGroup(d, all);
  s.total.kind = "all";
  s.experts = summarizeExperts(d);
  return s;
}

std::string formatChangeSummary(const ChangeSummary& s) {
  std::string o;
  o += s.exact ? "changed fractions (exact: every element checked)\n"
               : "changed fractions (sampled: " + std::to_string(s.samplePerTensor) +
                     " elements per tensor; ± = worst-case 95 % half-width of one step)\n";
  o += "| kind | tensors | params | changed/step (mean) | min..max over steps | ever changed |\n";
  o += "|---|---|---|---|---|---|\n";
  auto row = [&](const KindChange& k) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "| %s | %llu | %llu | %s%s | %s .. %s | %s |\n", k.kind.c_str(),
                  static_cast<unsigned long long>(k.tensors),
                  static_cast<unsigned long long>(k.params), pct(k.changedPerStep).c_str(),
                  s.exact ? "" : (" ± " + pct(k.halfWidth95)).c_str(), pct(k.minStep).c_str(),
                  pct(k.maxStep).c_str(), pct(k.everChanged).c_str());
    o += buf;
  };
  for (const auto& k : s.kinds) row(k);
  row(s.total);
  const ExpertChange& e = s.experts;
  if (e.cells > 0) {
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "routed experts, per (step, layer, expert): %llu cells, %.2f %% without tokens "
                  "(their changed fraction: %s); with tokens: mean %s, p10 %s, median %s, p90 %s, "
                  "max %s%s\n",
                  static_cast<unsigned long long>(e.cells),
                  100.0 * static_cast<double>(e.idleCells) / static_cast<double>(e.cells),
                  pct(e.idleChanged).c_str(), pct(e.activeMean).c_str(), pct(e.p10).c_str(),
                  pct(e.median).c_str(), pct(e.p90).c_str(), pct(e.max).c_str(),
                  s.exact ? "" : (" (± " + pct(e.cellHalfWidth95) + " per cell)").c_str());
    o += buf;
  }
  return o;
}

}  // namespace tide::traces
