#include "traces/generator.h"

#include "engine/core/clock.h"
#include "workloads/layout.h"
#include "workloads/model.h"
#include "workloads/weights.h"

namespace tide::traces {

Result<TraceData> generateTrace(const GenerateOptions& o, GenerateReport* report) {
  Stopwatch sw;
  if (o.steps < 1 || o.steps > 100000) {
    return TIDE_ERROR(Code::kInvalidArgument, "steps must be in 1..100000");
  }
  TIDE_ASSIGN_OR_RETURN(workloads::ModelSpec base, workloads::loadModel(o.model));
  TIDE_ASSIGN_OR_RETURN(workloads::ModelSpec spec, workloads::scaled(base, o.scale));
  TraceData d;
  if (!o.trainLayout.empty()) {
    TIDE_ASSIGN_OR_RETURN(auto l, workloads::parseTrainLayout(o.trainLayout));
    TIDE_RETURN_IF_ERROR(workloads::validate(l, spec));
    d.meta.trainLayout = l.toString();
  }
  if (!o.inferLayout.empty()) {
    TIDE_ASSIGN_OR_RETURN(auto l, workloads::parseInferLayout(o.inferLayout));
    TIDE_RETURN_IF_ERROR(workloads::validate(l, spec));
    d.meta.inferLayout = l.toString();
  }
  workloads::ModelInventory inv = workloads::buildInventory(spec);
  d.meta.model = spec.name;
  d.meta.scale = spec.scale;
  d.meta.steps = o.steps;
  d.meta.seed = o.seed;
  d.meta.generator = "tide 0.1.0 trace gen";
  d.meta.totalParams = inv.totalParams();
  d.meta.rl = o.rl;
  d.meta.rl.seed = o.seed;
  d.meta.routing = o.routing;
  d.meta.routing.seed = o.seed;
  d.meta.rollout = o.rollout;
  d.meta.rollout.seed = o.seed;
  for (const auto& t : inv.tensors) {
    d.tensors.names.push_back(t.name);
    d.tensors.numel.push_back(t.numel());
    d.tensors.kind.push_back(static_cast<uint8_t>(t.kind));
    d.tensors.layer.push_back(t.layer);
    d.tensors.expert.push_back(t.expert);
  }
  d.routing = workloads::generateRouting(spec, d.meta.routing, o.steps);
  workloads::SyntheticWeights w(inv, d.routing, d.meta.rl, o.steps);
  const bool exact = o.samplePerTensor == 0 || (o.autoExact && d.meta.totalParams <= o.exactLimit);
  TIDE_ASSIGN_OR_RETURN(
      d.delta, workloads::measureChanges(w, o.steps, exact ? 0 : o.samplePerTensor, o.threads,
                                         o.recordIndices));
  for (int s = 1; s <= o.steps; ++s)
    d.rollout.push_back(workloads::generateRollout(d.meta.rollout, s));
  if (report) {
    report->seconds = sw.seconds();
    report->exact = d.delta.exact;
    uint64_t checked = 0;
    for (uint64_t c : d.delta.checked) checked += c;
    report->elementSteps = checked * static_cast<uint64_t>(o.steps);
  }
  return d;
}

}  // namespace tide::traces
