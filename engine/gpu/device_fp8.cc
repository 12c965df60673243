#include "engine/gpu/device_fp8.h"

#include <string>

#include "engine/gpu/cuda_status.h"
#include "engine/gpu/kernels.h"

namespace tide::gpu {

Status quantizeE4m3OnDevice(const uint16_t* src, int64_t rows, int64_t cols, int block,
                            uint8_t* dst, float* scales, const Stream& stream) {
  if (rows < 0 || cols < 0 || block < 1 || block > 256) {
    return TIDE_ERROR(Code::kInvalidArgument, "gpu fp8: bad shape " + std::to_string(rows) + "x" +
                                                  std::to_string(cols) + " or block " +
                                                  std::to_string(block) + " (1..256)");
  }
  return cudaCheck(kernels::quantizeE4m3(src, rows, cols, block, dst, scales, stream.get()),
                   "gpu fp8 quantize");
}

}  // namespace tide::gpu
