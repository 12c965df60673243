#pragma once
// Data files compiled into the library (generated from workloads/models/*.toml
// and workloads/clusters/*.toml by CMake), so the binary needs no install dir.

#include <cstddef>

namespace tide::workloads::detail {

struct EmbeddedFile {
  const char* name;  // file stem, e.g. "kimi-k2"
  const char* text;
};

extern const EmbeddedFile kEmbeddedModels[];
extern const size_t kEmbeddedModelCount;
extern const EmbeddedFile kEmbeddedClusters[];
extern const size_t kEmbeddedClusterCount;

}  // namespace tide::workloads::detail
