#pragma once
// The FP8 conversions of one plan, timed on one core of this host with the
// executor's own quantizer: what an emulated cluster's ranks will spend on
// each conversion unit, measured before the prediction, not fitted on the
// run it predicts.
//
// One rate for every conversion (probeHostConvert's whole 4096 x 2048
// tensor) prices a scaled model's small tensors at the rate of large ones;
// the executor quantizes block by block, and a box of a few rows still costs
// a block's scale, its copies and its bookkeeping. So each distinct
// (tensor shape, box) the plan converts is quantized here as the executor
// does it (exec::quantizeBlocks over whole blocks read from a bf16 source)
// and the units' times are the sums of their moves'.

#include <cstdint>
#include <vector>

#include "engine/core/status.h"
#include "engine/exec/executor/fp8_blocks.h"
#include "engine/plan/schedule.h"
#include "engine/plan/transfer_plan.h"

namespace tide::harness {

// One FP8 quantization of `box` of tensor `t` of `p` as the executor makes
// it: from a bf16 source holding the whole blocks the box touches, values of
// every magnitude a weight has (no block all zeros); buffers made once, so
// run() is the quantization alone. Both host probes time it.
class QuantizeJob {
 public:
  QuantizeJob(const plan::TransferPlan& p, uint32_t t, const plan::RegionBox& box);
  [[nodiscard]] Status run();
  uint64_t outBytes() const { return dst_.bytes; }

 private:
  plan::RegionBox box_;
  std::vector<uint64_t> shape_;
  exec::Placed src_, dst_;
  std::vector<uint16_t> values_;
  std::vector<uint8_t> out_;
  exec::BlockSource source_;
};

struct ConversionProbe {
  std::vector<double> unitSeconds;  // by schedule unit; 0 for units that convert nothing
  uint64_t units = 0;               // units that convert
  uint64_t shapes = 0;              // distinct (shape, box) timed
  double seconds = 0;               // all units', one core
  double passBytes = 0;             // plan::fp8PassBytes of their bf16 input
  // The plan's conversions' rate on one core (passBytes / seconds): the
  // figure comparable with probeHostConvert's.
  double bytesPerSecond() const { return seconds > 0 ? passBytes / seconds : 0; }
};

// Times every conversion of `s` (the schedule of `p`). Each distinct shape
// is quantized once to warm up, then until it has taken at least 1 ms, five
// times; its time is the fastest of the five, per quantization.
[[nodiscard]] Result<ConversionProbe> probePlanConversions(const plan::TransferPlan& p,
                                                           const plan::Schedule& s);

}  // namespace tide::harness
