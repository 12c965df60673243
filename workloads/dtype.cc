#include "workloads/dtype.h"

#include <string>

namespace tide::workloads {

const char* dtypeName(DType t) {
  switch (t) {
    case DType::kBF16:
      return "bf16";
    case DType::kFP16:
      return "fp16";
    case DType::kFP32:
      return "fp32";
    case DType::kFP8E4M3:
      return "fp8_e4m3";
  }
  return "?";
}

Result<DType> parseDType(std::string_view name) {
  if (name == "bf16" || name == "bfloat16") return DType::kBF16;
  if (name == "fp16" || name == "float16") return DType::kFP16;
  if (name == "fp32" || name == "float32") return DType::kFP32;
  if (name == "fp8_e4m3" || name == "fp8" || name == "float8_e4m3fn") return DType::kFP8E4M3;
  return TIDE_ERROR(Code::kInvalidArgument,
                    "unknown dtype '" + std::string(name) + "' (bf16, fp16, fp32, fp8_e4m3)");
}

}  // namespace tide::workloads
