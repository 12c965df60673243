#include "engine/gpu/device_generator.h"

#include <vector>

#include "engine/gpu/cuda_status.h"
#include "engine/gpu/fill_params.h"
#include "engine/gpu/kernels.h"
#include "workloads/rng.h"

namespace tide::gpu {

Result<DeviceGenerator> DeviceGenerator::create(const workloads::SyntheticWeights& w) {
  DeviceGenerator g(w);
  constexpr size_t kTable = 65536 * sizeof(float);
  TIDE_ASSIGN_OR_RETURN(g.table_, DeviceBuffer::allocate(kTable));
  TIDE_RETURN_IF_ERROR(cudaCheck(
      cudaMemcpy(g.table_.data(), workloads::normalTable(), kTable, cudaMemcpyHostToDevice),
      "copying the normal table"));
  return g;
}

Status DeviceGenerator::fillBox(uint32_t tensor, const workloads::Box& box, int version,
                                uint16_t* out, const Stream& stream) const {
  std::vector<FillStep> steps;
  TIDE_ASSIGN_OR_RETURN(FillParams p, fillParams(*w_, tensor, version, &steps));
  TIDE_ASSIGN_OR_RETURN(BoxGeom g, boxGeom(w_->inventory().tensors[tensor].shape, box));
  DeviceBuffer dsteps;
  if (!steps.empty()) {
    TIDE_ASSIGN_OR_RETURN(dsteps, DeviceBuffer::allocate(steps.size() * sizeof(FillStep)));
    TIDE_RETURN_IF_ERROR(
        cudaCheck(cudaMemcpyAsync(dsteps.data(), steps.data(), steps.size() * sizeof(FillStep),
                                  cudaMemcpyHostToDevice, stream.get()),
                  "copying the AdamW schedule"));
  }
  p.table = static_cast<const float*>(table_.data());
  p.steps = static_cast<const FillStep*>(dsteps.data());
  TIDE_RETURN_IF_ERROR(cudaCheck(kernels::fill(p, g, box.volume(), out, stream.get()), "gpu fill"));
  // `steps` (host) and `dsteps` must live until the copy and kernel are done.
  return stream.synchronize();
}

}  // namespace tide::gpu
