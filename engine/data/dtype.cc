#include "engine/data/dtype.h"

namespace tide::data {
namespace {

struct Info {
  const char* name;
  uint32_t size;
};
constexpr Info kInfo[kDTypeCount] = {
    {"u8", 1},  {"i8", 1},  {"i16", 2},  {"i32", 4}, {"i64", 8}, {"u16", 2},  {"u32", 4},
    {"u64", 8}, {"f16", 2}, {"bf16", 2}, {"f32", 4}, {"f64", 8}, {"bool", 1},
};

}  // namespace

uint32_t dtypeSize(DType t) {
  auto i = static_cast<uint8_t>(t);
  return i < kDTypeCount ? kInfo[i].size : 0;
}

const char* dtypeName(DType t) {
  auto i = static_cast<uint8_t>(t);
  return i < kDTypeCount ? kInfo[i].name : "invalid";
}

Result<DType> parseDType(std::string_view name) {
  for (uint8_t i = 0; i < kDTypeCount; ++i)
    if (name == kInfo[i].name) return static_cast<DType>(i);
  return TIDE_ERROR(Code::kInvalidArgument, "unknown dtype '" + std::string(name) + "'");
}

}  // namespace tide::data
