#pragma once
// Lossless delta of one tensor between two versions (bf16, fp8, any element
// size up to 8 bytes). The encoding is chosen per tensor by size:
//   unchanged   header only
//   bitmap      one bit per element + the changed values
//   indices     sorted indices as delta varints + the changed values
//   dense-xor   old XOR new for every element (zeros where unchanged)
// optionally zstd-compressed. Every block carries xxh3 hashes of the base
// (old) bytes, of the stored payload and of the result, so apply() rejects a
// wrong base or a corrupt payload before it touches the target, and checks
// the result afterwards.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace tide::sync {

enum class DeltaEncoding : uint8_t { kUnchanged = 0, kBitmap = 1, kIndices = 2, kDenseXor = 3 };
const char* encodingName(DeltaEncoding e);

struct DeltaOptions {
  bool zstd = false;  // compress payloads (worth it for dense-xor; rarely for sparse)
  int zstdLevel = 1;
  // Force one encoding (tests, ablations); kUnchanged means "choose by size".
  DeltaEncoding force = DeltaEncoding::kUnchanged;
};

struct DeltaStats {
  uint64_t elements = 0;
  uint64_t changed = 0;
  uint64_t inputBytes = 0;    // bytes of the new version
  uint64_t encodedBytes = 0;  // header + payload as stored
  DeltaEncoding encoding = DeltaEncoding::kUnchanged;
  double changedFraction() const { return elements ? double(changed) / double(elements) : 0; }
};

// Appends the delta block for old -> next to `out`. Sizes must match and be a
// multiple of elemBytes (1, 2, 4 or 8).
Result<DeltaStats> encodeDelta(std::span<const uint8_t> old, std::span<const uint8_t> next,
                               uint32_t elemBytes, const DeltaOptions& options,
                               std::vector<uint8_t>& out);

// Applies one block in place: `target` holds the old version and ends as the
// new one. Returns the number of block bytes consumed. Fails with kDataLoss
// (target untouched) on a base mismatch or a corrupt/truncated block.
// `checked` skips the payload/base hashes when checkDelta() just passed.
Result<size_t> applyDelta(std::span<const uint8_t> block, std::span<uint8_t> target,
                          bool checked = false);

// The checks apply() makes before writing: header, sizes, payload hash, base hash.
Status checkDelta(std::span<const uint8_t> block, std::span<const uint8_t> target);

// Reads a block's header: encoding, sizes, without applying it.
Result<DeltaStats> inspectDelta(std::span<const uint8_t> block);

}  // namespace tide::sync
