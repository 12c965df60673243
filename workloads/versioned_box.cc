#include <algorithm>

#include "workloads/rng.h"
#include "workloads/weights.h"

namespace tide::workloads {

VersionedBox::VersionedBox(const SyntheticWeights& w, uint32_t tensor, Box box)
    : w_(w), tensor_(tensor), box_(std::move(box)) {
  flat_ = boxFlatIndices(w_.inventory().tensors.at(tensor).shape, box_);
  const size_t n = flat_.size();
  master_.resize(n);
  m_.assign(n, 0.0f);
  v_.assign(n, 0.0f);
  dir_.resize(n);
  w_.initialMaster(tensor_, flat_.data(), n, master_.data());
  w_.directions(tensor_, flat_.data(), n, dir_.data());
}

Status VersionedBox::advance(std::span<uint16_t> out) {
  if (version_ >= w_.maxVersion()) {
    return TIDE_ERROR(Code::kOutOfRange, "version " + std::to_string(version_ + 1) + " beyond " +
                                             std::to_string(w_.maxVersion()));
  }
  if (out.size() != flat_.size()) {
    return TIDE_ERROR(Code::kInvalidArgument, "buffer size does not match the box");
  }
  ++version_;
  const auto& st = w_.schedule(tensor_).steps[version_ - 1];
  adamStep(w_.config(),
           streamKey(w_.config().seed, tensor_, static_cast<uint64_t>(version_), kStreamGrad), st,
           flat_.data(), dir_.data(), flat_.size(), master_.data(), m_.data(), v_.data());
  current(out);
  return Status::ok();
}

void VersionedBox::current(std::span<uint16_t> out) const {
  const size_t n = std::min(out.size(), master_.size());
  for (size_t i = 0; i < n; ++i) out[i] = toBf16(master_[i]);
}

}  // namespace tide::workloads
