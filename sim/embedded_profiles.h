#pragma once
// The cost profiles compiled into the library (generated from
// profiles/*.toml by sim/CMakeLists.txt), so the binary needs no install dir.

#include <cstddef>

#include "workloads/embedded.h"

namespace tide::sim::detail {

extern const workloads::detail::EmbeddedFile kEmbeddedProfiles[];
extern const size_t kEmbeddedProfileCount;

}  // namespace tide::sim::detail
