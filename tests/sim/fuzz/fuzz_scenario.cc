// libFuzzer target: a simulation scenario (TOML written by users, strictly
// read: every key, type and unit checked) and the size / rate / count parsers
// under it must return a Status for any input, never crash or read out of
// bounds. A scenario that parses must also plan (the model of the published
// p2p runs, by steps) on its nodes, or say why not.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/core/units.h"
#include "harness/sim/scenario_plans.h"
#include "sim/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)tide::parseSize(text);
  (void)tide::parseRate(text);
  (void)tide::parseCount(text);
  auto sc = tide::sim::parseScenario(text, "fuzz");
  if (sc.isOk() && sc->model.layers < 8 && sc->model.experts < 64) {
    auto d = tide::sync::findStrategy("miles-p2p");
    if (d.isOk()) (void)tide::harness::scenarioPlan(*sc, **d);
  }
  return 0;
}
