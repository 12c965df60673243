#pragma once
// The host side of the GPU fill: the per-element parameters (fill_math.h) of
// one tensor at one version, taken from a SyntheticWeights, and a tensor
// box's geometry. No CUDA here: the host tests build these too.

#include <vector>

#include "engine/core/status.h"
#include "engine/gpu/fill_math.h"
#include "workloads/box.h"
#include "workloads/weights.h"

namespace tide::gpu {

// FillParams of `tensor` at `version` (table and steps left null: the
// caller points them at its copies) and the steps' schedule, steps[0 .. version).
Result<FillParams> fillParams(const workloads::SyntheticWeights& w, uint32_t tensor, int version,
                              std::vector<FillStep>* steps);

// The geometry of `box` in a tensor of `shape` (rank 1..kFillMaxDims).
Result<BoxGeom> boxGeom(const std::vector<uint64_t>& shape, const workloads::Box& box);

}  // namespace tide::gpu
