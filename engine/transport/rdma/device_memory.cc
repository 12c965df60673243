#include "engine/transport/rdma/device_memory.h"

#include <unistd.h>

#include <string>

#include "engine/core/errno_status.h"
#include "engine/core/fd.h"

#ifdef TIDE_HAVE_CUDA
#include <cuda.h>
#include <cuda_runtime_api.h>
#endif

namespace tide::transport::rdma {

#ifndef TIDE_HAVE_CUDA

bool deviceMemorySupported() {
  return false;
}

Result<MemoryRegion> registerDeviceMemory(ibv_pd*, void*, uint64_t, int) {
  return TIDE_ERROR(Code::kUnimplemented,
                    "CUDA memory registration needs a build with CUDA (TIDE_WITH_CUDA)");
}

#else

namespace {

using GetHandleFn = CUresult (*)(void*, CUdeviceptr, size_t, CUmemRangeHandleType,
                                 unsigned long long);
using GetAttrFn = CUresult (*)(int*, CUdevice_attribute, CUdevice);

template <typename Fn>
Result<Fn> driverEntry(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q{};
  cudaError_t e = cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &q);
  if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || fn == nullptr)
    return TIDE_ERROR(Code::kUnavailable, std::string("CUDA driver entry point ") + name +
                                              " unavailable: " + cudaGetErrorString(e));
  return reinterpret_cast<Fn>(fn);
}

}  // namespace

bool deviceMemorySupported() {
  return true;
}

Result<MemoryRegion> registerDeviceMemory(ibv_pd* pd, void* addr, uint64_t size, int access) {
  cudaPointerAttributes attrs{};
  cudaError_t e = cudaPointerGetAttributes(&attrs, addr);
  if (e != cudaSuccess)
    return TIDE_ERROR(
        Code::kUnavailable,
        std::string("CUDA unavailable for device memory registration: ") + cudaGetErrorString(e));
  if (attrs.type != cudaMemoryTypeDevice)
    return TIDE_ERROR(Code::kInvalidArgument, "MemoryKind::kCuda region is not CUDA device memory");
  TIDE_ASSIGN_OR_RETURN(auto getAttr, driverEntry<GetAttrFn>("cuDeviceGetAttribute"));
  int dmabuf = 0;
  if (getAttr(&dmabuf, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, attrs.device) != CUDA_SUCCESS ||
      dmabuf == 0)
    return TIDE_ERROR(Code::kUnavailable, "GPU " + std::to_string(attrs.device) +
                                              " does not support dma-buf export (GPUDirect RDMA "
                                              "needs an open kernel module and CUDA >= 11.7)");
  TIDE_ASSIGN_OR_RETURN(auto getHandle, driverEntry<GetHandleFn>("cuMemGetHandleForAddressRange"));
  // dma-buf export works on whole pages: export the page-aligned cover.
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  uint64_t start = reinterpret_cast<uint64_t>(addr);
  uint64_t alignedStart = start & ~(page - 1);
  uint64_t alignedEnd = (start + size + page - 1) & ~(page - 1);
  int fd = -1;
  CUresult r = getHandle(&fd, alignedStart, alignedEnd - alignedStart,
                         CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
  if (r != CUDA_SUCCESS || fd < 0)
    return TIDE_ERROR(Code::kUnavailable,
                      "cuMemGetHandleForAddressRange(dma-buf) failed with CUDA error " +
                          std::to_string(static_cast<int>(r)));
  UniqueFd owned(fd);
  MemoryRegion mr(ibv_reg_dmabuf_mr(pd, start - alignedStart, size, start, owned.get(), access));
  if (!mr) return TIDE_ERRNO("ibv_reg_dmabuf_mr (this RDMA device may not support dma-buf)");
  return mr;
}

#endif

}  // namespace tide::transport::rdma
