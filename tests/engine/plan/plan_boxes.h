#pragma once
// Boxes the plan tests build their plans from.

#include "engine/plan/transfer_plan.h"

namespace tide::plan {

// Rows [r0, r1) of a 2-D tensor `cols` wide.
inline RegionBox rows(Coord r0, Coord r1, Coord cols) {
  RegionBox b;
  b.ndim = 2;
  b.lo = {r0, 0, 0, 0};
  b.hi = {r1, cols, 0, 0};
  return b;
}

}  // namespace tide::plan
