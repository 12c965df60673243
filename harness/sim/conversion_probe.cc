#include "harness/sim/conversion_probe.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "engine/core/clock.h"
#include "engine/exec/executor/fp8_blocks.h"
#include "engine/plan/fp8_pass.h"

namespace tide::harness {

namespace {

using plan::RegionBox;

// `box` widened to the whole blocks it touches, as the bf16 source of a
// conversion holds them (fp8_blocks.h: the last two dims are blocked, the
// only dim of a 1-D tensor).
RegionBox wholeBlocks(const RegionBox& box, const std::vector<uint64_t>& shape, uint32_t b) {
  RegionBox w = box;
  const int first = box.ndim >= 2 ? box.ndim - 2 : 0;
  for (int d = first; d < box.ndim; ++d) {
    w.lo[d] = box.lo[d] / b * b;
    w.hi[d] = std::min<uint64_t>(shape[d], (box.hi[d] + b - 1) / b * b);
  }
  return w;
}

// One core's seconds to quantize `box` of tensor `t` as the executor does:
// the fastest of five rounds after a warm-up round (first touch of the
// buffers), each repeating the quantization for >= 1 ms. The fastest,
// because on a shared host interruptions only add time: with the median of
// three, one plan's probe varied by a third between invocations.
Result<double> timeShape(const plan::TransferPlan& p, uint32_t t, const RegionBox& box) {
  const plan::TensorInfo& ti = p.tensors[t];
  exec::Placed src, dst;
  src.tensor = dst.tensor = t;
  src.box = wholeBlocks(box, ti.shape, ti.fp8Block);
  src.bytes = 2 * src.box.volume();
  dst.box = box;
  dst.dtype = workloads::DType::kFP8E4M3;
  dst.fp8Block = ti.fp8Block;
  dst.bytes = p.regionBytes(t, box, dst.dtype);
  // Values of every magnitude a weight has (as probeHostConvert), so no
  // block is all zeros.
  std::vector<uint16_t> values(src.box.volume());
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<uint16_t>(0x3c00 + (i * 2654435761u >> 20) % 0x0800);
  std::vector<uint8_t> out(dst.bytes);
  const auto source = exec::bf16Blocks(src, reinterpret_cast<const uint8_t*>(values.data()));
  TIDE_RETURN_IF_ERROR(exec::quantizeBlocks(box, ti.shape, dst, out.data(), source));
  double best = 0;
  for (int round = 0; round < 5; ++round) {
    Stopwatch sw;
    int n = 0;
    do {
      TIDE_RETURN_IF_ERROR(exec::quantizeBlocks(box, ti.shape, dst, out.data(), source));
      ++n;
    } while (sw.seconds() < 1e-3);
    const double each = sw.seconds() / n;
    if (round == 0 || each < best) best = each;
  }
  return best;
}

}  // namespace

Result<ConversionProbe> probePlanConversions(const plan::TransferPlan& p, const plan::Schedule& s) {
  ConversionProbe out;
  out.unitSeconds.assign(s.units.size(), 0.0);
  // Keyed by shape and box: a scaled MoE model's experts are thousands of
  // tensors of a few shapes, each timed once.
  std::map<std::pair<std::vector<uint64_t>, std::string>, double> timed;
  for (size_t id = 0; id < s.units.size(); ++id) {
    const plan::Unit& u = s.units[id];
    if (!u.converts) continue;
    double secs = 0;
    for (uint32_t i = u.moveBegin; i < u.moveEnd; ++i) {
      const plan::Move& m = p.moves[s.moves[i]];
      if (m.srcDtype == m.dstDtype) continue;
      if (m.tensor >= p.tensors.size() || p.tensors[m.tensor].fp8Block == 0 ||
          m.dstDtype != workloads::DType::kFP8E4M3) {
        return TIDE_ERROR(Code::kInvalidArgument,
                          "conversion probe: unit " + std::to_string(id) +
                              " converts to something other than block-scaled FP8");
      }
      auto key = std::make_pair(p.tensors[m.tensor].shape, m.box.toString());
      auto it = timed.find(key);
      if (it == timed.end()) {
        TIDE_ASSIGN_OR_RETURN(double t, timeShape(p, m.tensor, m.box));
        it = timed.emplace(std::move(key), t).first;
      }
      secs += it->second;
    }
    out.unitSeconds[id] = secs;
    out.seconds += secs;
    out.passBytes += plan::fp8PassBytes(2.0 * static_cast<double>(u.bytes), 0);
    ++out.units;
  }
  out.shapes = timed.size();
  return out;
}

}  // namespace tide::harness
