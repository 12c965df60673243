// RegionBox: the plan's compact N-D box.

#include <algorithm>
#include <string>

#include "engine/plan/transfer_plan.h"

namespace tide::plan {

Result<RegionBox> RegionBox::from(const workloads::Box& b) {
  if (b.lo.size() != b.hi.size() || b.lo.size() > static_cast<size_t>(kMaxDims)) {
    return TIDE_ERROR(Code::kInvalidArgument,
                      "box " + b.toString() + ": rank must be <= " + std::to_string(kMaxDims));
  }
  RegionBox r;
  r.ndim = static_cast<uint8_t>(b.lo.size());
  for (size_t i = 0; i < b.lo.size(); ++i) {
    if (b.lo[i] > kMaxCoord || b.hi[i] > kMaxCoord) {
      return TIDE_ERROR(Code::kInvalidArgument,
                        "box " + b.toString() + ": a coordinate exceeds 2^32 - 1");
    }
    r.lo[i] = static_cast<Coord>(b.lo[i]);
    r.hi[i] = static_cast<Coord>(b.hi[i]);
  }
  return r;
}

workloads::Box RegionBox::toBox() const {
  workloads::Box b;
  b.lo.assign(lo.begin(), lo.begin() + ndim);
  b.hi.assign(hi.begin(), hi.begin() + ndim);
  return b;
}

uint64_t RegionBox::volume() const {
  uint64_t v = 1;
  for (int i = 0; i < ndim; ++i) {
    if (hi[i] <= lo[i]) return 0;
    v *= hi[i] - lo[i];
  }
  return v;
}

bool RegionBox::contains(const RegionBox& inner) const {
  if (inner.ndim != ndim) return false;
  for (int i = 0; i < ndim; ++i) {
    if (inner.lo[i] < lo[i] || inner.hi[i] > hi[i]) return false;
  }
  return true;
}

bool RegionBox::overlaps(const RegionBox& o) const {
  if (o.ndim != ndim) return false;
  for (int i = 0; i < ndim; ++i) {
    if (std::max(lo[i], o.lo[i]) >= std::min(hi[i], o.hi[i])) return false;
  }
  return true;
}

std::string RegionBox::toString() const {
  std::string s = "[";
  for (int i = 0; i < ndim; ++i) {
    if (i) s += ", ";
    s += std::to_string(lo[i]) + ":" + std::to_string(hi[i]);
  }
  return s + ")";
}

bool intersect(const RegionBox& a, const RegionBox& b, RegionBox* out) {
  if (a.ndim != b.ndim) return false;
  RegionBox r;
  r.ndim = a.ndim;
  for (int i = 0; i < a.ndim; ++i) {
    r.lo[i] = std::max(a.lo[i], b.lo[i]);
    r.hi[i] = std::min(a.hi[i], b.hi[i]);
    if (r.lo[i] >= r.hi[i]) return false;
  }
  *out = r;
  return true;
}

}  // namespace tide::plan
