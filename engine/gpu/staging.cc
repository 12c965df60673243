#include "engine/gpu/staging.h"

#include <string>

#include "engine/gpu/cuda_status.h"

namespace tide::gpu {
namespace {

Status enqueue(CopyDirection dir, uint8_t* device, uint8_t* host, const StagedTensor& t,
               const Stream& s) {
  if (t.bytes == 0) return Status::ok();
  if (dir == CopyDirection::kDeviceToHost) {
    return cudaCheck(cudaMemcpyAsync(host + t.hostOffset, device + t.deviceOffset, t.bytes,
                                     cudaMemcpyDeviceToHost, s.get()),
                     "D2H staging copy");
  }
  return cudaCheck(cudaMemcpyAsync(device + t.deviceOffset, host + t.hostOffset, t.bytes,
                                   cudaMemcpyHostToDevice, s.get()),
                   "H2D staging copy");
}

}  // namespace

Status copyPerTensor(CopyDirection dir, uint8_t* device, uint8_t* host,
                     std::span<const StagedTensor> tensors, const Stream& stream) {
  for (const StagedTensor& t : tensors) {
    TIDE_RETURN_IF_ERROR(enqueue(dir, device, host, t, stream));
    TIDE_RETURN_IF_ERROR(stream.synchronize());
  }
  return Status::ok();
}

Result<BucketedCopy> BucketedCopy::start(CopyDirection dir, uint8_t* device, uint8_t* host,
                                         std::span<const StagedTensor> tensors,
                                         uint64_t bucketBytes, std::span<const Stream> streams) {
  if (streams.empty() || bucketBytes == 0) {
    return TIDE_ERROR(Code::kInvalidArgument, "bucketed staging: needs a stream and a bucket size");
  }
  BucketedCopy c;
  const std::vector<size_t> bounds = bucketBounds(tensors, bucketBytes);
  for (size_t k = 0; k + 1 < bounds.size(); ++k) {
    const Stream& s = streams[k % streams.size()];
    for (const StagedTensor& m :
         mergedCopies(tensors.subspan(bounds[k], bounds[k + 1] - bounds[k]))) {
      TIDE_RETURN_IF_ERROR(enqueue(dir, device, host, m, s));
      ++c.copies_;
    }
    TIDE_ASSIGN_OR_RETURN(Event e, Event::create());
    TIDE_RETURN_IF_ERROR(e.record(s));
    c.events_.push_back(std::move(e));
  }
  return c;
}

Result<size_t> BucketedCopy::landedBuckets() {
  while (landed_ < events_.size()) {
    TIDE_ASSIGN_OR_RETURN(const bool done, events_[landed_].query());
    if (!done) break;
    ++landed_;
  }
  return landed_;
}

Status BucketedCopy::waitBucket(size_t k) const {
  if (k >= events_.size()) {
    return TIDE_ERROR(Code::kOutOfRange,
                      "bucket " + std::to_string(k) + " of " + std::to_string(events_.size()));
  }
  return events_[k].synchronize();
}

Status BucketedCopy::waitAll() const {
  for (const Event& e : events_) TIDE_RETURN_IF_ERROR(e.synchronize());
  return Status::ok();
}

}  // namespace tide::gpu
