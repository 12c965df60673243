#include "engine/exec/executor/shard_content.h"

#include <xxhash.h>

#include <cstring>
#include <span>
#include <string>

#include "engine/exec/executor/fp8_blocks.h"

namespace tide::exec {

using plan::Space;

Status fillTrainShard(const workloads::SyntheticWeights& weights, const RankLayout& layout,
                      int version, uint8_t* base) {
  for (const auto& p : layout.placed(Space::kTrain)) {
    if (p.dtype != workloads::DType::kBF16) {
      return TIDE_ERROR(Code::kUnimplemented, "exec: training shards must be bf16");
    }
    auto* out = reinterpret_cast<uint16_t*>(base + p.offset);
    TIDE_RETURN_IF_ERROR(
        weights.fillBox(p.tensor, p.box.toBox(), version, std::span(out, p.box.volume())));
  }
  return Status::ok();
}

Status fillInferShard(const workloads::SyntheticWeights& weights, const RankLayout& layout,
                      int version, bool poison, uint8_t* base) {
  for (const auto& p : layout.placed(Space::kInfer)) {
    if (poison) {
      std::memset(base + p.offset, 0xA5, p.bytes);
      continue;
    }
    TIDE_RETURN_IF_ERROR(fillExpected(weights, p, version, base + p.offset));
  }
  return Status::ok();
}

Result<uint64_t> verifyInferShard(const workloads::SyntheticWeights& weights,
                                  const RankLayout& layout, int rank, int version,
                                  const uint8_t* base) {
  uint64_t checked = 0;
  for (const auto& p : layout.placed(Space::kInfer)) {
    const uint64_t got = XXH3_64bits(base + p.offset, p.bytes);
    TIDE_ASSIGN_OR_RETURN(uint64_t want, expectedChecksum(weights, p, version));
    if (got != want) {
      return TIDE_ERROR(Code::kDataLoss,
                        "verify: rank " + std::to_string(rank) + " " +
                            weights.inventory().tensors[p.tensor].name + " " + p.box.toString() +
                            " is not version " + std::to_string(version) + " (xxh3 " +
                            std::to_string(got) + ", expected " + std::to_string(want) + ")");
    }
    checked += p.bytes;
  }
  return checked;
}

}  // namespace tide::exec
