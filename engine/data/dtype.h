#pragma once
// Element types of batch columns. The numeric values are part of the wire
// format (manifest schema version 1): never renumber, only append.

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/core/status.h"

namespace tide::data {

enum class DType : uint8_t {
  kU8 = 0,
  kI8 = 1,
  kI16 = 2,
  kI32 = 3,
  kI64 = 4,
  kU16 = 5,
  kU32 = 6,
  kU64 = 7,
  kF16 = 8,
  kBF16 = 9,
  kF32 = 10,
  kF64 = 11,
  kBool = 12,
};

inline constexpr uint8_t kDTypeCount = 13;

// Bytes per element; 0 for a value outside the enum.
uint32_t dtypeSize(DType t);
const char* dtypeName(DType t);
Result<DType> parseDType(std::string_view name);
inline bool validDType(uint8_t raw) {
  return raw < kDTypeCount;
}

// The DType of a C++ element type, for typed views.
template <typename T>
constexpr DType dtypeOf();
template <>
constexpr DType dtypeOf<uint8_t>() {
  return DType::kU8;
}
template <>
constexpr DType dtypeOf<int8_t>() {
  return DType::kI8;
}
template <>
constexpr DType dtypeOf<int16_t>() {
  return DType::kI16;
}
template <>
constexpr DType dtypeOf<int32_t>() {
  return DType::kI32;
}
template <>
constexpr DType dtypeOf<int64_t>() {
  return DType::kI64;
}
template <>
constexpr DType dtypeOf<uint16_t>() {
  return DType::kU16;
}
template <>
constexpr DType dtypeOf<uint32_t>() {
  return DType::kU32;
}
template <>
constexpr DType dtypeOf<uint64_t>() {
  return DType::kU64;
}
template <>
constexpr DType dtypeOf<float>() {
  return DType::kF32;
}
template <>
constexpr DType dtypeOf<double>() {
  return DType::kF64;
}
template <>
constexpr DType dtypeOf<bool>() {
  return DType::kBool;
}

}  // namespace tide::data
