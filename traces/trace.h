#pragma once
// In-memory form of a tide trace file (docs/formats/trace.md). No HDF5 here:
// trace_file.h reads and writes it.

#include <cstdint>
#include <string>
#include <vector>

#include "traces/event.h"
#include "workloads/rl_update.h"
#include "workloads/rollout.h"
#include "workloads/routing.h"

namespace tide::traces {

inline constexpr const char* kSchemaName = "tide-trace";
// 2: fixed-length strings; 3: events carry their schedule unit and piece.
// Version 2 files are read too (their events have no unit).
inline constexpr int64_t kSchemaVersion = 3;
inline constexpr int64_t kOldestSchemaVersion = 2;

struct TraceMeta {
  std::string model;  // zoo name or the model's own name
  int scale = 1;
  int steps = 0;
  uint64_t seed = 1;
  std::string trainLayout;  // e.g. "tp=8,pp=8,cp=4,ep=32,etp=1,dp=1" (informative)
  std::string inferLayout;
  std::string generator;  // "tide <version> trace gen"
  uint64_t totalParams = 0;
  workloads::RlConfig rl;
  workloads::RoutingConfig routing;
  workloads::RolloutConfig rollout;
};

struct TensorTable {
  std::vector<std::string> names;
  std::vector<uint64_t> numel;
  std::vector<uint8_t> kind;  // workloads::TensorKind
  std::vector<int32_t> layer;
  std::vector<int32_t> expert;
  size_t size() const { return names.size(); }
};

struct TraceData {
  TraceMeta meta;
  TensorTable tensors;
  workloads::RoutingTrace routing;  // empty for dense models
  workloads::ChangeStats delta;
  std::vector<std::vector<workloads::RolloutSample>> rollout;  // [step]
  std::vector<Event> events;
};

}  // namespace tide::traces
