#pragma once
// Collective (engine/transport/collective.h) on NCCL: one communicator over
// config.worldSize ranks, its unique id created by rank 0 and exchanged
// through config.store, one CUDA device per rank (rank mod device count, or
// options["device"]). A world of one rank is a real communicator too, so one
// GPU runs the same code path as many. Creation fails with "no CUDA device"
// where there is none.

#include <memory>

#include "engine/transport/collective.h"
#include "engine/transport/registry.h"

namespace tide::transport::nccl {

Result<std::unique_ptr<Collective>> createNcclCollective(const TransportConfig& config);

}  // namespace tide::transport::nccl
