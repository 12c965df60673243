#include "engine/gpu/shard_memory.h"

#include <string>

namespace tide::gpu {

namespace {

Status outside(const char* what, uint64_t offset, uint64_t bytes, uint64_t shardBytes) {
  return TIDE_ERROR(Code::kOutOfRange, std::string(what) + " [" + std::to_string(offset) + ", +" +
                                           std::to_string(bytes) + ") outside a shard of " +
                                           std::to_string(shardBytes) + " bytes");
}

bool fits(uint64_t offset, uint64_t bytes, uint64_t size) {
  return offset <= size && bytes <= size - offset;
}

}  // namespace

Status checkRanges(std::span<const ShardRange> ranges, uint64_t shardBytes) {
  for (const ShardRange& r : ranges) {
    if (!fits(r.offset, r.bytes, shardBytes))
      return outside("range", r.offset, r.bytes, shardBytes);
  }
  return Status::ok();
}

Status checkStaged(std::span<const StagedTensor> tensors, uint64_t shardBytes) {
  for (const StagedTensor& t : tensors) {
    if (!fits(t.deviceOffset, t.bytes, shardBytes)) {
      return outside("staged tensor", t.deviceOffset, t.bytes, shardBytes);
    }
  }
  return Status::ok();
}

}  // namespace tide::gpu
