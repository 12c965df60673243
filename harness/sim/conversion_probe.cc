#include "harness/sim/conversion_probe.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "engine/core/clock.h"
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
  QuantizeJob job(p, t, box);
  TIDE_RETURN_IF_ERROR(job.run());
  double best = 0;
  for (int round = 0; round < 5; ++round) {
    Stopwatch sw;
    int n = 0;
    do {
      TIDE_RETURN_IF_ERROR(job.run());
      ++n;
    } while (sw.seconds() < 1e-3);
    const double each = sw.seconds() / n;
    if (round == 0 || each < best) best = each;
  }
  return best;
}

}  // namespace

QuantizeJob::QuantizeJob(const plan::TransferPlan& p, uint32_t t, const RegionBox& box)
    : box_(box), shape_(p.tensors[t].shape) {
  const plan::TensorInfo& ti = p.tensors[t];
  src_.tensor = dst_.tensor = t;
  src_.box = wholeBlocks(box, ti.shape, ti.fp8Block);
  src_.bytes = 2 * src_.box.volume();
  dst_.box = box;
  dst_.dtype = workloads::DType::kFP8E4M3;
  dst_.fp8Block = ti.fp8Block;
  dst_.bytes = p.regionBytes(t, box, dst_.dtype);
  values_.resize(src_.box.volume());
  for (size_t i = 0; i < values_.size(); ++i)
    values_[i] = static_cast<uint16_t>(0x3c00 + (i * 2654435761u >> 20) % 0x0800);
  out_.resize(dst_.bytes);
  source_ = exec::bf16Blocks(src_, reinterpret_cast<const uint8_t*>(values_.data()));
}

Status QuantizeJob::run() {
  return exec::quantizeBlocks(box_, shape_, dst_, out_.data(), source_);
}

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
