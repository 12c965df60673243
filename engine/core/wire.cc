#include "engine/core/wire.h"

#include <cmath>
#include <cstring>

namespace tide {

WireWriter::WireWriter(WireKind kind) {
  bytes_.push_back(static_cast<char>(kWireMagic));
  bytes_.push_back(static_cast<char>(kWireVersion));
  put(static_cast<uint16_t>(kind), 2);
}

void WireWriter::put(uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) bytes_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

WireWriter& WireWriter::u32(uint32_t v) {
  put(v, 4);
  return *this;
}

WireWriter& WireWriter::u64(uint64_t v) {
  put(v, 8);
  return *this;
}

WireWriter& WireWriter::f64(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return u64(bits);
}

WireReader::WireReader(std::string_view bytes, WireKind kind, std::string what)
    : bytes_(bytes), what_(std::move(what)) {
  if (bytes_.size() < kWireHeaderBytes) {
    fail("truncated header (" + std::to_string(bytes_.size()) + " bytes)");
    return;
  }
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(bytes_[i]); };
  if (byte(0) != kWireMagic) {
    fail("not a tide record (first byte " + std::to_string(byte(0)) + ")");
  } else if (byte(1) != kWireVersion) {
    fail("format version " + std::to_string(byte(1)) + ", this build reads version " +
         std::to_string(kWireVersion));
  } else if (const uint16_t k = static_cast<uint16_t>(byte(2) | byte(3) << 8);
             k != static_cast<uint16_t>(kind)) {
    fail("record kind " + std::to_string(k) + ", expected " +
         std::to_string(static_cast<uint16_t>(kind)));
  }
  pos_ = kWireHeaderBytes;
}

void WireReader::fail(const std::string& why) {
  if (ok()) error_ = TIDE_ERROR(Code::kDataLoss, "bad " + what_ + ": " + why);
}

bool WireReader::get(uint64_t& v, int bytes) {
  if (!ok()) return false;
  if (bytes_.size() - pos_ < static_cast<size_t>(bytes)) {
    fail("truncated at byte " + std::to_string(pos_) + " of " + std::to_string(bytes_.size()));
    return false;
  }
  uint64_t x = 0;
  for (int i = 0; i < bytes; ++i) x |= uint64_t{static_cast<uint8_t>(bytes_[pos_ + i])} << (8 * i);
  pos_ += static_cast<size_t>(bytes);
  v = x;
  return true;
}

bool WireReader::u32(uint32_t& v) {
  uint64_t x;
  if (!get(x, 4)) return false;
  v = static_cast<uint32_t>(x);
  return true;
}

bool WireReader::u64(uint64_t& v) {
  return get(v, 8);
}

bool WireReader::i32(int32_t& v) {
  uint32_t x;
  if (!u32(x)) return false;
  v = static_cast<int32_t>(x);
  return true;
}

bool WireReader::f64(double& v) {
  uint64_t bits;
  if (!get(bits, 8)) return false;
  double x;
  std::memcpy(&x, &bits, sizeof x);
  // Times, rates and sizes are finite; a NaN would poison every sum after it.
  if (!std::isfinite(x)) {
    fail("not a finite number at byte " + std::to_string(pos_ - 8));
    return false;
  }
  v = x;
  return true;
}

Status WireReader::finish() {
  if (ok() && pos_ != bytes_.size()) {
    fail(std::to_string(bytes_.size() - pos_) + " bytes left over after byte " +
         std::to_string(pos_));
  }
  return error_;
}

}  // namespace tide
