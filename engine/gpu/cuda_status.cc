#include "engine/gpu/cuda_status.h"

namespace tide::gpu {

Status cudaCheck(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Status::ok();
  // Reset the runtime's last error (a refused cudaMalloc, say), so the next
  // kernel launch's cudaGetLastError() reports that launch, not this call.
  (void)cudaGetLastError();
  const Code code =
      (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver)
          ? Code::kUnavailable
          : (e == cudaErrorMemoryAllocation ? Code::kResourceExhausted : Code::kInternal);
  return TIDE_ERROR(code, std::string(what) + ": " + cudaGetErrorString(e));
}

int deviceCount() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the "no driver / no device" error
    return 0;
  }
  return n;
}

std::string DeviceInfo::versionText(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

Result<DeviceInfo> deviceInfo(int device) {
  if (device < 0 || device >= deviceCount()) {
    return TIDE_ERROR(Code::kUnavailable, kNoDevice);
  }
  cudaDeviceProp prop{};
  TIDE_RETURN_IF_ERROR(
      cudaCheck(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties"));
  DeviceInfo d;
  d.index = device;
  d.name = prop.name;
  d.computeMajor = prop.major;
  d.computeMinor = prop.minor;
  d.memoryBytes = prop.totalGlobalMem;
  TIDE_RETURN_IF_ERROR(cudaCheck(cudaDriverGetVersion(&d.driverVersion), "cudaDriverGetVersion"));
  TIDE_RETURN_IF_ERROR(
      cudaCheck(cudaRuntimeGetVersion(&d.runtimeVersion), "cudaRuntimeGetVersion"));
  return d;
}

}  // namespace tide::gpu
