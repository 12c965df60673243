#pragma once
// Name matching in an inference engine's weight loader. SGLang's
// load_weights for MoE models walks, for every checkpoint tensor it is
// handed, a short list of stacked parameters (q/k/v, gate/up) and then the
// expert mapping: one (expert, shard) entry per routed expert and projection,
// expert-major, in gate, down, up order, tested by substring until the
// tensor's entry. A tensor that is neither stacked nor an expert walks the
// whole mapping. The number of entries tested is structure (it grows with
// the expert count); each costs the profile's py_step.

#include "workloads/tensor.h"

namespace tide::sync::miles {

// Entries of the stacked-parameter list tested before the expert mapping.
inline constexpr double kStackedEntries = 5;

// Loop steps the loader spends matching `t`'s name in a model with
// `experts` routed experts per MoE layer (0: a dense model).
double loaderScanSteps(const workloads::TensorSpec& t, int experts);

// Loop steps of the same matching done once more on the sending side of the
// p2p path: before loading its CPU replica, every source maps each tensor's
// name to the replica parameter it completes (SGLang's ParameterMapper.map:
// the expert mapping first, in the same order, then the stacked list), to
// know when that parameter is ready to be written.
double mapperScanSteps(const workloads::TensorSpec& t, int experts);

}  // namespace tide::sync::miles
