#pragma once
// One encoding for the records processes hand each other through the
// rendezvous store: a 4-byte header (magic, format version, record kind)
// then fixed-width little-endian fields. The reader trusts nothing it is
// given: every field is bounds-checked, and a short, long, foreign or
// newer record is one kDataLoss error that says which and where; no throw.

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/core/status.h"

namespace tide {

// The record kinds, one per struct that crosses the store. Values are part
// of the format: append, never renumber.
enum class WireKind : uint16_t {
  kTiming = 1,    // a rank's step (exec/rank_records.h)
  kSetup = 2,     // a rank's set-up work
  kEvents = 3,    // a rank's transfer events of a step
  kSwitch = 4,    // a rank's version switch
  kJoinPull = 5,  // a joining rank's pull
  kWindow = 6,    // an inference rank's transfer window
};

inline constexpr uint8_t kWireMagic = 0x54;  // 'T'
// The format's version; a reader refuses any other. Bump it whenever a
// record's fields change.
inline constexpr uint8_t kWireVersion = 3;
inline constexpr size_t kWireHeaderBytes = 4;

class WireWriter {
 public:
  explicit WireWriter(WireKind kind);

  WireWriter& u32(uint32_t v);
  WireWriter& u64(uint64_t v);
  WireWriter& i32(int32_t v) { return u32(static_cast<uint32_t>(v)); }
  WireWriter& f64(double v);

  std::string take() { return std::move(bytes_); }

 private:
  void put(uint64_t v, int bytes);
  std::string bytes_;
};

// Reads one record. Each getter returns false, and leaves the value alone,
// once the record has failed (too short, a double not finite); finish()
// tells why, or that bytes were left over.
class WireReader {
 public:
  // `what` names the record in errors ("timing record from rank 3").
  WireReader(std::string_view bytes, WireKind kind, std::string what);

  bool u32(uint32_t& v);
  bool u64(uint64_t& v);
  bool i32(int32_t& v);
  bool f64(double& v);

  size_t remaining() const { return ok() ? bytes_.size() - pos_ : 0; }
  bool ok() const { return error_.isOk(); }
  // Marks the record bad for a reason of the caller's (a field out of range).
  void fail(const std::string& why);
  // The record's status: ok only if it was read to its last byte.
  Status finish();

 private:
  bool get(uint64_t& v, int bytes);

  std::string_view bytes_;
  size_t pos_ = 0;
  std::string what_;
  Status error_;
};

}  // namespace tide
