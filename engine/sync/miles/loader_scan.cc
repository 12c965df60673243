#include "engine/sync/miles/loader_scan.h"

#include <string_view>

namespace tide::sync::miles {

namespace {

bool contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

// Position of a routed expert's projection in its expert's entries.
int shardIndex(std::string_view name) {
  if (contains(name, ".gate_proj.")) return 0;
  if (contains(name, ".down_proj.")) return 1;
  return 2;  // up_proj
}

bool stacked(std::string_view name) {
  for (std::string_view p : {".q_proj.", ".k_proj.", ".v_proj.", ".gate_proj.", ".up_proj."}) {
    if (contains(name, p)) return true;
  }
  return false;
}

}  // namespace

double loaderScanSteps(const workloads::TensorSpec& t, int experts) {
  if (experts <= 0) return kStackedEntries;
  if (t.kind == workloads::TensorKind::kRoutedExpert) {
    return kStackedEntries + 3.0 * t.expert + shardIndex(t.name) + 1;
  }
  if (stacked(t.name)) return kStackedEntries;
  return kStackedEntries + 3.0 * experts;
}

double mapperScanSteps(const workloads::TensorSpec& t, int experts) {
  if (experts <= 0) return kStackedEntries;
  if (t.kind == workloads::TensorKind::kRoutedExpert) {
    return 3.0 * t.expert + shardIndex(t.name) + 1;
  }
  return 3.0 * experts + kStackedEntries;
}

}  // namespace tide::sync::miles
