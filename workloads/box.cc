#include "workloads/box.h"

#include <algorithm>

namespace tide::workloads {

Box Box::full(const std::vector<uint64_t>& shape) {
  return Box{std::vector<uint64_t>(shape.size(), 0), shape};
}

uint64_t Box::volume() const {
  if (lo.size() != hi.size()) return 0;
  uint64_t v = 1;
  for (size_t d = 0; d < lo.size(); ++d) {
    if (hi[d] <= lo[d]) return 0;
    v *= hi[d] - lo[d];
  }
  return v;
}

std::vector<uint64_t> Box::extent() const {
  std::vector<uint64_t> e(lo.size());
  for (size_t d = 0; d < lo.size(); ++d) e[d] = hi[d] > lo[d] ? hi[d] - lo[d] : 0;
  return e;
}

bool Box::contains(const Box& inner) const {
  if (inner.rank() != rank() || inner.hi.size() != hi.size()) return false;
  for (size_t d = 0; d < lo.size(); ++d) {
    if (inner.lo[d] < lo[d] || inner.hi[d] > hi[d]) return false;
  }
  return true;
}

std::string Box::toString() const {
  std::string s = "[";
  for (size_t d = 0; d < lo.size(); ++d) {
    if (d) s += ", ";
    s += std::to_string(lo[d]) + ":" + std::to_string(d < hi.size() ? hi[d] : 0);
  }
  return s + ")";
}

std::optional<Box> intersect(const Box& a, const Box& b) {
  if (a.rank() != b.rank() || a.hi.size() != a.lo.size() || b.hi.size() != b.lo.size()) {
    return std::nullopt;
  }
  Box r;
  r.lo.resize(a.rank());
  r.hi.resize(a.rank());
  for (size_t d = 0; d < a.rank(); ++d) {
    r.lo[d] = std::max(a.lo[d], b.lo[d]);
    r.hi[d] = std::min(a.hi[d], b.hi[d]);
    if (r.hi[d] <= r.lo[d]) return std::nullopt;
  }
  return r;
}

}  // namespace tide::workloads
