// libFuzzer target: the TOML and text parsers of workloads/ (model, cluster,
// layouts, emulated clusters) must return a Status for any input, never crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "workloads/cluster.h"
#include "workloads/layout.h"
#include "workloads/model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  using namespace tide::workloads;
  auto m = parseModelToml(text, "fuzz");
  if (m.isOk()) {
    // Valid specs must also build and scale without trouble.
    auto s = scaled(*m, 7);
    if (s.isOk() && s->layers < 8 && s->experts < 64) {
      ModelInventory inv = buildInventory(*s);
      (void)inv.totalParams();
    }
  }
  (void)parseClusterToml(text, "fuzz");
  (void)parseEmulated(text);
  auto t = parseTrainLayout(text);
  auto i = parseInferLayout(text);
  if (m.isOk() && t.isOk() && m->layers < 8 && m->experts < 64) (void)validate(*t, *m);
  if (m.isOk() && i.isOk() && m->layers < 8 && m->experts < 64) (void)validate(*i, *m);
  return 0;
}
