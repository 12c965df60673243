#include "engine/gpu/fill_params.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "workloads/rng.h"

namespace tide::gpu {

Result<FillParams> fillParams(const workloads::SyntheticWeights& w, uint32_t tensor, int version,
                              std::vector<FillStep>* steps) {
  if (tensor >= w.inventory().tensors.size()) {
    return TIDE_ERROR(Code::kOutOfRange, "tensor " + std::to_string(tensor) + " not in inventory");
  }
  if (version < 0 || version > w.maxVersion()) {
    return TIDE_ERROR(Code::kOutOfRange, "version " + std::to_string(version) + " outside 0.." +
                                             std::to_string(w.maxVersion()));
  }
  const workloads::RlConfig& cfg = w.config();
  FillParams p;
  p.initKey = workloads::streamKey(cfg.seed, tensor, 0, workloads::kStreamInit);
  p.dirKey = workloads::streamKey(cfg.seed, tensor, 0, workloads::kStreamDirection);
  p.mean = w.initMean(tensor);
  p.sd = w.initStd(tensor);
  // The same float constants as workloads::adamStep derives from the config.
  p.b1 = static_cast<float>(cfg.beta1);
  p.b2 = static_cast<float>(cfg.beta2);
  p.eps = static_cast<float>(cfg.eps);
  p.decay = static_cast<float>(cfg.lr * cfg.weightDecay);
  p.sig = static_cast<float>(cfg.signal);
  p.noise = std::sqrt(std::max(0.0f, 1.0f - p.sig * p.sig));
  p.version = version;
  steps->assign(static_cast<size_t>(version), FillStep{});
  const workloads::AdamSchedule& sched = w.schedule(tensor);
  for (int s = 1; s <= version; ++s) {
    const auto& st = sched.steps[s - 1];
    FillStep& f = (*steps)[s - 1];
    f.active = st.active ? 1 : 0;
    f.gradKey =
        workloads::streamKey(cfg.seed, tensor, static_cast<uint64_t>(s), workloads::kStreamGrad);
    f.gs = static_cast<float>(cfg.gradStd) * st.gradScale;
    f.lrOverBc1 = st.lrOverBc1;
    f.invBc2 = st.invBc2;
  }
  return p;
}

Result<BoxGeom> boxGeom(const std::vector<uint64_t>& shape, const workloads::Box& box) {
  const size_t r = shape.size();
  if (r == 0 || r > static_cast<size_t>(kFillMaxDims) || box.rank() != r ||
      !workloads::Box::full(shape).contains(box)) {
    return TIDE_ERROR(Code::kInvalidArgument,
                      "gpu fill: box " + box.toString() + " is not inside a tensor of rank " +
                          std::to_string(r) + " (1.." + std::to_string(kFillMaxDims) + ")");
  }
  BoxGeom g;
  g.ndim = static_cast<int>(r);
  uint64_t stride = 1;
  for (size_t d = r; d-- > 0;) {
    g.lo[d] = box.lo[d];
    g.extent[d] = box.hi[d] - box.lo[d];
    g.stride[d] = stride;
    stride *= shape[d];
  }
  return g;
}

}  // namespace tide::gpu
