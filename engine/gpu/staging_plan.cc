#include "engine/gpu/staging_plan.h"

namespace tide::gpu {

std::vector<size_t> bucketBounds(std::span<const StagedTensor> tensors, uint64_t bucketBytes) {
  std::vector<size_t> bounds{0};
  uint64_t held = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    held += tensors[i].bytes;
    if (held >= bucketBytes && i + 1 < tensors.size()) {
      bounds.push_back(i + 1);
      held = 0;
    }
  }
  if (!tensors.empty()) bounds.push_back(tensors.size());
  return bounds;
}

std::vector<StagedTensor> mergedCopies(std::span<const StagedTensor> tensors) {
  std::vector<StagedTensor> out;
  for (const StagedTensor& t : tensors) {
    if (t.bytes == 0) continue;
    if (!out.empty() && out.back().deviceOffset + out.back().bytes == t.deviceOffset &&
        out.back().hostOffset + out.back().bytes == t.hostOffset) {
      out.back().bytes += t.bytes;
    } else {
      out.push_back(t);
    }
  }
  return out;
}

}  // namespace tide::gpu
