#include "engine/gpu/cuda_shard_memory.h"

#include <xxhash.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/gpu/cuda_status.h"
#include "engine/gpu/device_buffer.h"
#include "engine/gpu/device_checksum.h"
#include "engine/gpu/device_generator.h"
#include "engine/gpu/host_registration.h"
#include "engine/gpu/staging.h"
#include "engine/gpu/stream.h"

namespace tide::gpu {

namespace {

class CudaShardBuffer final : public ShardBuffer {
 public:
  explicit CudaShardBuffer(DeviceBuffer b) : b_(std::move(b)) {}
  uint64_t size() const override { return b_.size(); }
  uint8_t* data() const { return b_.bytes(); }

 private:
  DeviceBuffer b_;
};

class CudaHostPin final : public HostPin {
 public:
  explicit CudaHostPin(HostRegistration r) : r_(std::move(r)) {}

 private:
  HostRegistration r_;
};

// Adjacent ranges as one.
std::vector<ShardRange> merged(std::span<const ShardRange> ranges) {
  std::vector<ShardRange> out;
  for (const ShardRange& r : ranges) {
    if (r.bytes == 0) continue;
    if (!out.empty() && out.back().offset + out.back().bytes == r.offset) {
      out.back().bytes += r.bytes;
    } else {
      out.push_back(r);
    }
  }
  return out;
}

// Bucketed staging in flight: bucket k has landed once its event has.
class CudaBucketedJob final : public StagingJob {
 public:
  CudaBucketedJob(BucketedCopy c, std::vector<size_t> bounds, const StageStats& st)
      : c_(std::move(c)), bounds_(std::move(bounds)), st_(st) {}
  ~CudaBucketedJob() override { (void)c_.waitAll(); }

  Result<size_t> landed() override {
    TIDE_ASSIGN_OR_RETURN(const size_t k, c_.landedBuckets());
    return bounds_[k];
  }
  Result<StageStats> finish() override {
    TIDE_RETURN_IF_ERROR(c_.waitAll());
    return st_;
  }

 private:
  BucketedCopy c_;
  std::vector<size_t> bounds_;  // bucketBounds: first tensor of each bucket, then size()
  StageStats st_;
};

class CudaShardMemory final : public ShardMemory {
 public:
  CudaShardMemory(int device, DeviceGenerator gen, Stream stream)
      : device_(device), gen_(std::move(gen)), stream_(std::move(stream)) {}

  const char* kind() const override { return "cuda"; }

  Result<std::unique_ptr<ShardBuffer>> allocate(uint64_t bytes) override {
    TIDE_RETURN_IF_ERROR(current());
    TIDE_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::allocate(bytes));
    return std::unique_ptr<ShardBuffer>(new CudaShardBuffer(std::move(b)));
  }

  Result<std::unique_ptr<HostPin>> pin(uint8_t* host, uint64_t bytes) override {
    TIDE_RETURN_IF_ERROR(current());
    TIDE_ASSIGN_OR_RETURN(HostRegistration r, HostRegistration::create(host, bytes));
    return std::unique_ptr<HostPin>(new CudaHostPin(std::move(r)));
  }

  Status fill(ShardBuffer& dst, uint64_t offset, uint32_t tensor, const workloads::Box& box,
              int version) override {
    TIDE_RETURN_IF_ERROR(current());
    const ShardRange r{offset, box.volume() * sizeof(uint16_t)};
    TIDE_RETURN_IF_ERROR(checkRanges({&r, 1}, dst.size()));
    auto* out = reinterpret_cast<uint16_t*>(buf(dst) + offset);
    return gen_.fillBox(tensor, box, version, out, stream_);
  }

  Result<std::unique_ptr<StagingJob>> startStage(CopyDirection dir, ShardBuffer& shard,
                                                 uint8_t* host,
                                                 std::span<const StagedTensor> tensors,
                                                 const StagingOptions& o) override {
    TIDE_RETURN_IF_ERROR(current());
    TIDE_RETURN_IF_ERROR(checkStaged(tensors, shard.size()));
    StageStats st;
    for (const StagedTensor& t : tensors) st.bytes += t.bytes;
    if (o.bucketBytes == 0) {
      TIDE_RETURN_IF_ERROR(copyPerTensor(dir, buf(shard), host, tensors, stream_));
      for (const StagedTensor& t : tensors) st.copies += t.bytes > 0;
      st.buckets = tensors.size();
      return finishedStagingJob(st, tensors.size());
    }
    const size_t streams = static_cast<size_t>(std::max(o.streams, 1));
    while (copyStreams_.size() < streams) {
      TIDE_ASSIGN_OR_RETURN(Stream s, Stream::create());
      copyStreams_.push_back(std::move(s));
    }
    TIDE_ASSIGN_OR_RETURN(
        BucketedCopy c, BucketedCopy::start(dir, buf(shard), host, tensors, o.bucketBytes,
                                            std::span<const Stream>(copyStreams_.data(), streams)));
    st.copies = c.copies();
    st.buckets = c.buckets();
    return std::unique_ptr<StagingJob>(
        new CudaBucketedJob(std::move(c), bucketBounds(tensors, o.bucketBytes), st));
  }

  Result<uint64_t> checksum(const ShardBuffer& src, std::span<const ShardRange> ranges) override {
    TIDE_RETURN_IF_ERROR(current());
    TIDE_RETURN_IF_ERROR(checkRanges(ranges, src.size()));
    const std::vector<ShardRange> m = merged(ranges);
    if (m.empty()) return static_cast<uint64_t>(XXH3_64bits(nullptr, 0));
    if (m.size() == 1) return deviceXxh3(buf(src) + m[0].offset, m[0].bytes, stream_);
    // Scattered ranges: gathered device to device into one scratch buffer,
    // then hashed as one input (XXH3 of a concatenation is not a function
    // of the parts' hashes).
    uint64_t total = 0;
    for (const ShardRange& r : m) total += r.bytes;
    TIDE_ASSIGN_OR_RETURN(DeviceBuffer scratch, DeviceBuffer::allocate(total));
    uint64_t at = 0;
    for (const ShardRange& r : m) {
      TIDE_RETURN_IF_ERROR(
          cudaCheck(cudaMemcpyAsync(scratch.bytes() + at, buf(src) + r.offset, r.bytes,
                                    cudaMemcpyDeviceToDevice, stream_.get()),
                    "gathering a shard's ranges"));
      at += r.bytes;
    }
    return deviceXxh3(scratch.data(), total, stream_);  // synchronizes before scratch goes
  }

 private:
  Status current() const { return cudaCheck(cudaSetDevice(device_), "cudaSetDevice"); }
  // Only buffers this object allocated reach it (ShardBuffer's contract).
  static uint8_t* buf(const ShardBuffer& b) {
    return static_cast<const CudaShardBuffer&>(b).data();
  }

  int device_;
  DeviceGenerator gen_;
  Stream stream_;                    // fills, per-tensor copies, checksums
  std::vector<Stream> copyStreams_;  // bucketed copies
};

}  // namespace

Result<std::unique_ptr<ShardMemory>> makeCudaShardMemory(const workloads::SyntheticWeights& weights,
                                                         int device) {
  const int n = deviceCount();
  if (n == 0) return TIDE_ERROR(Code::kUnavailable, kNoDevice);
  if (device < 0 || device >= n) {
    return TIDE_ERROR(Code::kInvalidArgument, "CUDA device " + std::to_string(device) +
                                                  " does not exist (" + std::to_string(n) +
                                                  " devices)");
  }
  TIDE_RETURN_IF_ERROR(cudaCheck(cudaSetDevice(device), "cudaSetDevice"));
  TIDE_ASSIGN_OR_RETURN(DeviceGenerator gen, DeviceGenerator::create(weights));
  TIDE_ASSIGN_OR_RETURN(Stream stream, Stream::create());
  return std::unique_ptr<ShardMemory>(
      new CudaShardMemory(device, std::move(gen), std::move(stream)));
}

}  // namespace tide::gpu
