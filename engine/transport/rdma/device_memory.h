#pragma once
// GPU memory registration (GPUDirect RDMA through dma-buf): the CUDA driver
// exports the allocation as a dma-buf fd and ibv_reg_dmabuf_mr registers it.
// Compiled with TIDE_HAVE_CUDA; the driver is reached through the CUDA
// runtime's entry-point query, so a host without a GPU driver still runs and
// gets a clear error instead of failing to load.

#include <infiniband/verbs.h>

#include <cstdint>

#include "engine/core/status.h"
#include "engine/transport/rdma/verbs.h"

namespace tide::transport::rdma {

// true when built with CUDA (whether a GPU is present is checked at use).
bool deviceMemorySupported();

// Registers [addr, addr+size) of CUDA device memory on `pd`.
// kUnimplemented without CUDA in the build; kUnavailable without a driver, a
// GPU, dma-buf support, or when addr is not device memory.
Result<MemoryRegion> registerDeviceMemory(ibv_pd* pd, void* addr, uint64_t size, int access);

}  // namespace tide::transport::rdma
