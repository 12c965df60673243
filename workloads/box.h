#pragma once
// Half-open N-D box [lo, hi) in element coordinates of a tensor's logical
// shape. Shards of a tensor (a rank's TP/EP slice) are boxes; resharding is
// box intersection.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tide::workloads {

struct Box {
  std::vector<uint64_t> lo;
  std::vector<uint64_t> hi;

  // The whole tensor of the given shape.
  static Box full(const std::vector<uint64_t>& shape);

  size_t rank() const { return lo.size(); }
  // Product of the extents; 0 when any extent is empty.
  uint64_t volume() const;
  bool empty() const { return volume() == 0; }
  std::vector<uint64_t> extent() const;
  // True when `inner` lies entirely within this box (same rank).
  bool contains(const Box& inner) const;
  // "[0:128, 64:128)" style text, for logs and errors.
  std::string toString() const;

  bool operator==(const Box& o) const = default;
};

// The overlap of two boxes of the same rank, or nullopt when it is empty or
// the ranks differ.
std::optional<Box> intersect(const Box& a, const Box& b);

}  // namespace tide::workloads
