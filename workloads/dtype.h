#pragma once
// Element types of weights in training and inference.

#include <cstdint>
#include <string_view>

#include "engine/core/status.h"

namespace tide::workloads {

enum class DType : uint8_t { kBF16, kFP16, kFP32, kFP8E4M3 };

constexpr uint32_t bytesOf(DType t) {
  switch (t) {
    case DType::kBF16:
    case DType::kFP16:
      return 2;
    case DType::kFP32:
      return 4;
    case DType::kFP8E4M3:
      return 1;
  }
  return 0;
}

const char* dtypeName(DType t);  // "bf16", "fp16", "fp32", "fp8_e4m3"
Result<DType> parseDType(std::string_view name);

}  // namespace tide::workloads
