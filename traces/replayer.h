#pragma once
// Steps through a trace one RL step at a time, for a sync run driven by
// `--trace F.h5`: which experts got tokens, which tensors changed and by how
// much, and the rollout of that step.

#include <string>

#include "engine/core/status.h"
#include "traces/trace.h"

namespace tide::traces {

struct StepView {
  int step = 0;  // 1-based RL step = the weight version it produces
  // Routing of this step: tokens per (moe layer, expert), row-major.
  const uint32_t* routing = nullptr;
  int moeLayers = 0, experts = 0;
  // Estimated changed fraction of each tensor in this step (versions step-1 -> step).
  std::vector<double> changedFraction;
  // Estimated changed elements over all tensors (sum of fraction x numel).
  double changedElements = 0;
  const std::vector<workloads::RolloutSample>* rollout = nullptr;
};

class TraceReplayer {
 public:
  static Result<TraceReplayer> open(const std::string& path);
  explicit TraceReplayer(TraceData data) : data_(std::move(data)) {}

  const TraceData& data() const { return data_; }
  int steps() const { return data_.meta.steps; }
  bool done() const { return next_ > steps(); }
  // The next step (1, 2, ...); kOutOfRange after the last.
  Result<StepView> next();
  Result<StepView> step(int s) const;
  void rewind() { next_ = 1; }

 private:
  TraceData data_;
  int next_ = 1;
};

}  // namespace tide::traces
