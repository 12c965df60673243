#pragma once
// CUDA runtime errors as Status, and what the machine has: device count
// (0, not an error, where there is no driver or device) and a device's
// model, driver and runtime versions for result documents.

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "engine/core/status.h"

namespace tide::gpu {

// The skip reason every GPU test and `tide bench gpu` gives without a device.
inline constexpr const char* kNoDevice = "no CUDA device";

// Also clears the runtime's last error (sticky errors stay: the context is lost).
Status cudaCheck(cudaError_t e, const char* what);

// Number of CUDA devices; 0 when there is no driver or no device.
int deviceCount();

struct DeviceInfo {
  int index = 0;
  std::string name;  // e.g. "NVIDIA H200"
  int computeMajor = 0, computeMinor = 0;
  uint64_t memoryBytes = 0;
  int driverVersion = 0;                  // cudaDriverGetVersion: 1000 * major + 10 * minor
  int runtimeVersion = 0;                 // cudaRuntimeGetVersion
  static std::string versionText(int v);  // 12040 -> "12.4"
};

Result<DeviceInfo> deviceInfo(int device);

}  // namespace tide::gpu
