#pragma once
// Compares two result sets metric by metric: change of the median in %, a
// two-sided Mann-Whitney U test, and a verdict. A regression is a change in
// the worse direction beyond the metric's threshold that is also significant.

#include <string>
#include <vector>

#include "harness/compare/result_set.h"

namespace tide::harness {

// kSame: no significant difference; kNoiseOnly: significant but within the threshold.
enum class Verdict { kSame, kImproved, kRegressed, kNoiseOnly, kTooFewSamples, kMissing };
const char* verdictName(Verdict v);

struct CompareOptions {
  double thresholdPercent = 5.0;
  // (regex, percent): the first matching pattern sets a metric's threshold.
  std::vector<std::pair<std::string, double>> perMetric;
  double alpha = 0.05;
  size_t minSamples = 9;
};

struct MetricComparison {
  std::string name;
  std::string unit;
  bool higherIsBetter = false;
  size_t baseCount = 0, newCount = 0;
  double baseMedian = 0, newMedian = 0;
  double changePercent = 0;  // (new - base) / base
  double pValue = 1;
  double thresholdPercent = 0;
  Verdict verdict = Verdict::kSame;
};

Result<std::vector<MetricComparison>> compareSets(const ResultSet& base, const ResultSet& next,
                                                  const CompareOptions& options);
double median(std::vector<double> v);

}  // namespace tide::harness
