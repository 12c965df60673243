#pragma once
// A frame: the deltas of many tensors between two versions. Tensors are
// grouped into items (an MoE expert's gate/up/down tensors form one item);
// an item whose tensors are all unchanged costs one bit in the frame's item
// bitmap and nothing else — the MoE fast path, since experts that received
// no tokens in a step get no gradient.

#include <cstdint>
#include <span>
#include <vector>

#include "engine/sync/delta/delta_codec.h"

namespace tide::sync {

struct TensorVersions {
  std::span<const uint8_t> old;
  std::span<const uint8_t> next;
  uint32_t elemBytes = 2;
};

struct FrameStats {
  uint64_t items = 0, changedItems = 0;
  uint64_t elements = 0, changed = 0;
  uint64_t inputBytes = 0, encodedBytes = 0;
  uint64_t byEncoding[4] = {0, 0, 0, 0};  // tensors per DeltaEncoding
  double changedFraction() const { return elements ? double(changed) / double(elements) : 0; }
  double compressionRatio() const {
    return encodedBytes ? double(inputBytes) / double(encodedBytes) : 0;
  }
};

// items[i] lists the tensors of item i (indices into `tensors`), in order.
Result<FrameStats> encodeFrame(std::span<const TensorVersions> tensors,
                               const std::vector<std::vector<uint32_t>>& items,
                               uint64_t fromVersion, uint64_t toVersion,
                               const DeltaOptions& options, std::vector<uint8_t>& out);

// Applies a frame in place to `targets` (same order as at encode time).
// The frame's structure and every block are validated before the first byte
// of any target is written, so a corrupt frame leaves every target untouched.
Status applyFrame(std::span<const uint8_t> frame, std::span<const std::span<uint8_t>> targets,
                  const std::vector<std::vector<uint32_t>>& items, uint64_t expectFrom,
                  uint64_t expectTo);

}  // namespace tide::sync
