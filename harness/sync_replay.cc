#include "harness/sync_replay.h"

#include "traces/trace_file.h"

namespace tide::harness {

Result<ReplaySource> loadReplay(const std::string& path, const workloads::ModelSpec& spec,
                                const workloads::ModelInventory& inventory, int steps) {
  ReplaySource r;
  if (path.empty()) return r;
  traces::ReadOptions ro;
  ro.events = false;
  ro.rollout = false;
  auto data = traces::readTrace(path, ro);
  if (!data.isOk()) return data.status().withContext("--replay " + path);
  const traces::TraceMeta& m = data->meta;
  auto bad = [&](const std::string& why) {
    return TIDE_ERROR(Code::kInvalidArgument, "--replay " + path + ": " + why);
  };
  if (m.model != spec.name || m.scale != spec.scale) {
    return bad("the trace is of " + m.model + " at scale " + std::to_string(m.scale) +
               ", the run of " + spec.name + " at scale " + std::to_string(spec.scale) +
               " (pass --model " + m.model + " --scale " + std::to_string(m.scale) + ")");
  }
  const auto& names = data->tensors.names;
  if (names.size() != inventory.tensors.size()) {
    return bad("the trace has " + std::to_string(names.size()) + " tensors, the model " +
               std::to_string(inventory.tensors.size()));
  }
  for (size_t t = 0; t < names.size(); ++t) {
    if (names[t] != inventory.tensors[t].name) {
      return bad("tensor " + std::to_string(t) + " is " + names[t] + " in the trace, " +
                 inventory.tensors[t].name + " in the model");
    }
  }
  if (steps > m.steps) {
    return bad("the trace has " + std::to_string(m.steps) + " RL steps; --steps " +
               std::to_string(steps) + " asks for more");
  }
  r.path = path;
  r.routing = std::move(data->routing);
  r.rl = m.rl;
  r.traceSteps = m.steps;
  return r;
}

}  // namespace tide::harness
