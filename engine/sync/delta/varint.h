#pragma once
// LEB128 unsigned varints for the sorted-index delta encoding.

#include <cstddef>
#include <cstdint>

namespace tide::sync {

inline size_t varintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

inline uint8_t* putVarint(uint8_t* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return p;
}

// Returns nullptr on a truncated or over-long varint.
inline const uint8_t* getVarint(const uint8_t* p, const uint8_t* end, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64 && p < end; shift += 7) {
    uint8_t b = *p++;
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return p;
  }
  return nullptr;
}

}  // namespace tide::sync
