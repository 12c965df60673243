#pragma once
// The self-describing manifest of a published batch. A batch is published as
// field payloads in registered memory (64-byte aligned) plus this manifest,
// written to the rendezvous store LAST, so a reader that finds the manifest
// finds complete payloads. Binary, little-endian:
//
//   magic "TDBM" u32 | schema version u16 | flags u16 | body | xxh3-64(all before) u64
//   flags: bit 0 = payload checksums not computed (every seg's checksum is 0)
//   body: generation u64, id str, rows i64, meta str (JSON),
//         regions u32 x (rank i32, descriptor str),
//         fields  u32 x (name str, kind u8, dtype u8, ndim u8, dims i64[ndim],
//                        valueBase i64, valueCount i64, data seg, offsets seg)
//   seg:  region u32, offset u64, length u64, xxh3-64 u64     str: u32 length + bytes
//
// decode() checks every count, bound, alignment and size relation, so a
// manifest that decodes is safe to plan reads from.

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/data/column.h"
#include "engine/transport/transport.h"

namespace tide::data {

inline constexpr uint16_t kManifestVersion = 1;
inline constexpr uint16_t kFlagNoPayloadChecksums = 1;
inline constexpr uint64_t kPayloadAlign = 64;
// `v` rounded up to the next field boundary.
inline constexpr uint64_t alignPayload(uint64_t v) {
  return (v + kPayloadAlign - 1) / kPayloadAlign * kPayloadAlign;
}
inline constexpr uint32_t kMaxFields = 4096;
inline constexpr uint32_t kMaxRegions = 4096;
inline constexpr uint32_t kMaxDims = 8;
inline constexpr uint32_t kMaxNameBytes = 1024;
inline constexpr uint32_t kMaxMetaBytes = 1u << 24;

struct Segment {
  uint32_t region = 0;  // index into Manifest::regions
  uint64_t offset = 0;  // within that region
  uint64_t length = 0;
  uint64_t checksum = 0;  // piecewise xxh3-64 (payload_checksum.h); 0 when not computed
};

struct FieldManifest {
  std::string name;
  ColumnKind kind = ColumnKind::kDense;
  DType dtype = DType::kU8;
  std::vector<int64_t> dims;  // dense: full shape (dims[0] == rows); ragged: inner shape
  int64_t valueBase = 0;      // ragged: offsets[0] of the payload's first item
  int64_t valueCount = 0;     // ragged: items in the values payload
  Segment data;
  Segment offsets;  // ragged/object only: rows+1 int64

  uint64_t itemBytes() const;  // dense row / ragged item bytes (valid after decode)
};

struct Manifest {
  uint16_t version = kManifestVersion;
  uint64_t generation = 0;  // bumped by every append
  // Whether the segments carry checksums (ChecksumPolicy of the publisher).
  bool payloadChecksums = true;
  std::string id;
  int64_t rows = 0;
  std::string metaJson = "{}";
  std::vector<transport::RemoteRegion> regions;
  std::vector<FieldManifest> fields;

  const FieldManifest* find(const std::string& name) const;
  uint64_t payloadBytes() const;
  std::string encode() const;
  static Result<Manifest> decode(const std::string& bytes);
  // The relations decode() enforces, for a manifest built in memory.
  Status validate() const;
};

uint64_t checksum(const void* data, uint64_t length);

}  // namespace tide::data
