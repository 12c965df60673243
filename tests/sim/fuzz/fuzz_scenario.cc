// libFuzzer target: a simulation scenario (TOML written by users, strictly
// read: every key, type and unit checked) and the size / rate / count parsers
// under it must return a Status for any input, never crash or read out of
// bounds. (That the seeds plan, or say why not: scenario_test.cc.)

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/core/units.h"
#include "sim/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)tide::parseSize(text);
  (void)tide::parseRate(text);
  (void)tide::parseCount(text);
  (void)tide::sim::parseScenario(text, "fuzz");
  return 0;
}
