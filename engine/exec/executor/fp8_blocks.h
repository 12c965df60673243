#pragma once
// FP8 (e4m3, block scales) holdings in the executor's buffers.
//
// A placed FP8 box is its e4m3 bytes, row-major over the box, followed by one
// fp32 scale per block the box touches: blocks tile the last two dims (the
// only dim of a 1-D tensor) in `block` x `block` squares of the whole tensor,
// leading dims count element by element, and the scales lie row-major over
// that grid (the same count plan::TransferPlan::regionBytes charges). A box
// that cuts a block still carries the block's scale, so two ranks that share
// a block both hold it.
//
// A block's scale depends on every element of the block, so whoever
// quantizes reads whole blocks: the p2p sender from its staging box (widened
// to whole blocks by the planner), a broadcast receiver from the bucket
// entry, and the verifier from the weight generator, independently of both.

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "engine/core/status.h"
#include "engine/exec/executor/rank_layout.h"
#include "workloads/weights.h"

namespace tide::exec {

// Fills `out` (row-major over `blockBox`) with the bf16 values of a whole
// block of the tensor.
using BlockSource = std::function<Status(const plan::RegionBox& blockBox, std::span<uint16_t> out)>;

// Copies of `box` between two FP8 blocks: the e4m3 bytes and the scales of
// every block `box` touches. Appends to `out`.
void fp8Runs(const plan::RegionBox& box, const Placed& src, const Placed& dst,
             std::vector<Run>& out);

// Quantizes `box` into the FP8 block `dst` (at `dstBase`), block by block,
// reading each whole block it touches from `source`.
[[nodiscard]] Status quantizeBlocks(const plan::RegionBox& box, const std::vector<uint64_t>& shape,
                                    const Placed& dst, uint8_t* dstBase, const BlockSource& source);

// A BlockSource that reads from a bf16 block `src` at `srcBase`; fails when
// `src` does not hold a requested block whole.
BlockSource bf16Blocks(const Placed& src, const uint8_t* srcBase);

// Version `version` of a placed block as the generator defines it, quantized
// block by block when the block is FP8: what a rank must hold. Writes
// p.bytes at `at`.
[[nodiscard]] Status fillExpected(const workloads::SyntheticWeights& w, const Placed& p,
                                  int version, uint8_t* at);
// xxh3 of the same bytes (streamed for bf16, so memory stays bounded).
[[nodiscard]] Result<uint64_t> expectedChecksum(const workloads::SyntheticWeights& w,
                                                const Placed& p, int version);

}  // namespace tide::exec
