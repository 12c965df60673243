#include "harness/compare/comparison.h"

#include <algorithm>
#include <cmath>
#include <regex>

#include "harness/compare/mann_whitney.h"

namespace tide::harness {

const char* verdictName(Verdict v) {
  switch (v) {
    case Verdict::kSame:
      return "same";
    case Verdict::kImproved:
      return "improved";
    case Verdict::kRegressed:
      return "REGRESSED";
    case Verdict::kNoiseOnly:
      return "within threshold";
    case Verdict::kTooFewSamples:
      return "too few samples";
    case Verdict::kMissing:
      return "missing";
  }
  return "?";
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

Result<std::vector<MetricComparison>> compareSets(const ResultSet& base, const ResultSet& next,
                                                  const CompareOptions& options) {
  std::vector<std::pair<std::regex, double>> rules;
  for (const auto& [pattern, pct] : options.perMetric) {
    try {
      rules.emplace_back(std::regex(pattern), pct);
    } catch (const std::regex_error&) {
      return TIDE_ERROR(Code::kInvalidArgument, "bad threshold pattern '" + pattern + "'");
    }
  }
  std::vector<MetricComparison> out;
  for (const auto& [name, b] : base.metrics) {
    MetricComparison c;
    c.name = name;
    c.unit = b.unit;
    c.higherIsBetter = b.higherIsBetter;
    c.baseCount = b.values.size();
    c.baseMedian = median(b.values);
    c.thresholdPercent = options.thresholdPercent;
    for (const auto& [re, pct] : rules)
      if (std::regex_search(name, re)) {
        c.thresholdPercent = pct;
        break;
      }
    auto it = next.metrics.find(name);
    if (it == next.metrics.end()) {
      c.verdict = Verdict::kMissing;
      out.push_back(c);
      continue;
    }
    const Metric& n = it->second;
    c.newCount = n.values.size();
    c.newMedian = median(n.values);
    c.changePercent = c.baseMedian != 0 ? (c.newMedian - c.baseMedian) / c.baseMedian * 100.0 : 0;
    c.pValue = mannWhitneyU(b.values, n.values).pValue;
    double worse = c.higherIsBetter ? -c.changePercent : c.changePercent;  // > 0 is worse
    bool significant = c.pValue < options.alpha;
    if (c.baseCount < options.minSamples || c.newCount < options.minSamples)
      c.verdict = Verdict::kTooFewSamples;
    else if (!significant)
      c.verdict = Verdict::kSame;
    else if (std::fabs(c.changePercent) <= c.thresholdPercent)
      c.verdict = Verdict::kNoiseOnly;
    else
      c.verdict = worse > 0 ? Verdict::kRegressed : Verdict::kImproved;
    out.push_back(c);
  }
  for (const auto& [name, n] : next.metrics)
    if (!base.metrics.count(name)) {
      MetricComparison c;
      c.name = name;
      c.unit = n.unit;
      c.newCount = n.values.size();
      c.newMedian = median(n.values);
      c.verdict = Verdict::kMissing;
      out.push_back(c);
    }
  return out;
}

}  // namespace tide::harness
