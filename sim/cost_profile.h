#pragma once
// A cost profile (TOML, docs/formats/profile.md): the costs of an update's
// non-wire steps for one software stack at one version, every constant
// labelled with where it comes from. The hardware is the scenario's
// [cluster]; the counts of each step come from the strategy. Profiles ship
// in profiles/*.toml, compiled in; a path to another file works too.

#include <string>
#include <string_view>
#include <vector>

#include "engine/core/status.h"
#include "sim/calibration.h"

namespace tide::sim {

enum class ConstantLabel : uint8_t {
  kDatasheet,       // a published specification (hardware, or the modelled software's code)
  kMicroBenchmark,  // measured by `command`
  kFittedOn,        // derived from the figures of `rows`, which it cannot then validate
  kEstimate,        // an order of magnitude from a cited fact
};
const char* constantLabelName(ConstantLabel l);

struct CostConstant {
  std::string key;  // as in the file, e.g. "host_op"
  double seconds = 0;
  ConstantLabel label = ConstantLabel::kEstimate;
  std::string source;
  std::string command;            // kMicroBenchmark
  std::vector<std::string> rows;  // kFittedOn: "scenario/strategy[/span]"
  std::string unit;               // as written, for writing the profile back
  // The range the value is known to lie in (seconds; both < 0 when the file
  // gives none): the bounds a fit may move the constant within.
  double lowSeconds = -1, highSeconds = -1;
  bool hasRange() const { return lowSeconds >= 0 && highSeconds >= lowSeconds; }
  // kFittedOn by tide sim calibrate: the fit's error (predicted /
  // published - 1) on each of `rows`, in their order.
  std::vector<double> residuals;
};

struct CostProfile {
  std::string name, stack, version;
  std::vector<CostConstant> constants;  // in the file's order
  Calibration calib;                    // the same values, for the simulator
  const CostConstant* find(std::string_view key) const;
};

// The compiled-in profile of that name, else the file at that path.
Result<CostProfile> loadProfile(std::string_view nameOrPath);
Result<CostProfile> parseProfile(std::string_view tomlText, std::string_view origin);
std::vector<std::string> profileNames();
// The value a Calibration holds for a profile key (0 for an unknown key).
double calibrationSeconds(const Calibration& k, std::string_view key);
// Sets the Calibration field of a profile key; false for an unknown key.
bool setCalibrationSeconds(Calibration& k, std::string_view key, double seconds);
// Seconds per unit of a profile unit (s, ms, us, ns).
Result<double> profileUnitSeconds(const std::string& unit);

}  // namespace tide::sim
