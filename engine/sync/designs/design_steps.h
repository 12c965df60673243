#pragma once
// Step helpers the design models share (design_strategies.h), on top of the
// Miles update's (engine/sync/miles/miles_update.h): its byte accounting,
// collectives and control rounds are the same mechanisms.

#include <vector>

#include "engine/sync/miles/miles_update.h"

namespace tide::sync::designs {

using miles::Ctx;
using miles::StepId;

// A point-to-point NCCL send of `bytes` from `src`'s GPU memory to `dst`'s
// (GPUDirect over the NICs across nodes, NVLink within one): a broadcast
// to a group of one, as NCCL runs it.
StepId gpuSend(Ctx& x, uint32_t src, uint32_t dst, double bytes, uint16_t stage);

// Every inference rank's plan id.
std::vector<uint32_t> inferRanks(const Ctx& x);

// An engine rank's load of `tensors` tensors of which it keeps `kept`
// (`keptBytes` copied into its parameters), after `after`; one rank per
// engine stands for its peers. Returns the load's end.
StepId engineLoad(Ctx& x, uint32_t rank, double tensors, double kept, double scanSteps,
                  double keptBytes, StepId after, uint16_t stage);

}  // namespace tide::sync::designs
