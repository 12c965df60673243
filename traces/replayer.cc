#include "traces/replayer.h"

#include "traces/trace_file.h"

namespace tide::traces {

Result<TraceReplayer> TraceReplayer::open(const std::string& path) {
  ReadOptions o;
  o.events = false;
  TIDE_ASSIGN_OR_RETURN(TraceData d, readTrace(path, o));
  return TraceReplayer(std::move(d));
}

Result<StepView> TraceReplayer::step(int s) const {
  if (s < 1 || s > steps()) {
    return TIDE_ERROR(Code::kOutOfRange,
                      "step " + std::to_string(s) + " outside 1.." + std::to_string(steps()));
  }
  StepView v;
  v.step = s;
  const auto& r = data_.routing;
  if (!r.empty()) {
    v.routing = r.counts.data() + static_cast<size_t>(s - 1) * r.moeLayers * r.experts;
    v.moeLayers = r.moeLayers;
    v.experts = r.experts;
  }
  const size_t nt = data_.tensors.size();
  v.changedFraction.resize(nt);
  for (size_t t = 0; t < nt; ++t) {
    v.changedFraction[t] = data_.delta.fraction(s, static_cast<uint32_t>(t));
    v.changedElements += v.changedFraction[t] * static_cast<double>(data_.tensors.numel[t]);
  }
  if (static_cast<size_t>(s) <= data_.rollout.size()) v.rollout = &data_.rollout[s - 1];
  return v;
}

Result<StepView> TraceReplayer::next() {
  auto v = step(next_);
  if (v.isOk()) ++next_;
  return v;
}

}  // namespace tide::traces
