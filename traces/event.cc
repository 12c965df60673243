#include "traces/event.h"

namespace tide::traces {

namespace {
constexpr const char* kNames[kEventPathCount] = {"unknown",  "nvlink", "rdma",     "tcp",
                                                 "shm",      "nccl",   "pcie_h2d", "pcie_d2h",
                                                 "host_mem", "disk",   "store",    "compute"};
}  // namespace

const char* pathName(EventPath p) {
  const auto i = static_cast<size_t>(p);
  return i < kEventPathCount ? kNames[i] : "unknown";
}

EventPath parsePath(std::string_view name) {
  for (int i = 0; i < kEventPathCount; ++i) {
    if (name == kNames[i]) return static_cast<EventPath>(i);
  }
  return EventPath::kUnknown;
}

}  // namespace tide::traces
