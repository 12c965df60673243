#include "engine/gpu/host_shard_memory.h"

#include <xxhash.h>

#include <cstring>
#include <string>
#include <vector>

namespace tide::gpu {

namespace {

class HostShardBuffer final : public ShardBuffer {
 public:
  explicit HostShardBuffer(uint64_t bytes)
      : data_(bytes ? std::make_unique<uint8_t[]>(bytes) : nullptr), bytes_(bytes) {}
  uint64_t size() const override { return bytes_; }
  uint8_t* data() const { return data_.get(); }

 private:
  std::unique_ptr<uint8_t[]> data_;
  uint64_t bytes_;
};

class NoPin final : public HostPin {};

// XXH3's streaming state, freed on destruction.
class Xxh3State {
 public:
  Xxh3State() : s_(XXH3_createState()) { XXH3_64bits_reset(s_); }
  ~Xxh3State() { XXH3_freeState(s_); }
  Xxh3State(const Xxh3State&) = delete;
  Xxh3State& operator=(const Xxh3State&) = delete;
  void update(const uint8_t* p, uint64_t n) { XXH3_64bits_update(s_, p, n); }
  uint64_t digest() const { return XXH3_64bits_digest(s_); }

 private:
  XXH3_state_t* s_;
};

void copyOne(CopyDirection dir, uint8_t* shard, uint8_t* host, const StagedTensor& t) {
  if (t.bytes == 0) return;
  if (dir == CopyDirection::kDeviceToHost) {
    std::memcpy(host + t.hostOffset, shard + t.deviceOffset, t.bytes);
  } else {
    std::memcpy(shard + t.deviceOffset, host + t.hostOffset, t.bytes);
  }
}

// Bucketed staging on the host: one more bucket lands each time the job is
// asked (a stand-in for a GPU's asynchronous copies that is deterministic:
// a caller that reads a bucket before it landed reads the previous bytes).
class HostBucketedJob final : public StagingJob {
 public:
  HostBucketedJob(CopyDirection dir, uint8_t* shard, uint8_t* host,
                  std::span<const StagedTensor> tensors, uint64_t bucketBytes, const StageStats& st)
      : dir_(dir),
        shard_(shard),
        host_(host),
        tensors_(tensors),
        bounds_(bucketBounds(tensors, bucketBytes)),
        st_(st) {}

  Result<size_t> landed() override {
    if (next_ + 1 < bounds_.size()) copyBucket();
    return bounds_[next_];
  }

  Result<StageStats> finish() override {
    while (next_ + 1 < bounds_.size()) copyBucket();
    return st_;
  }

 private:
  void copyBucket() {
    const size_t b = bounds_[next_], e = bounds_[next_ + 1];
    for (const StagedTensor& m : mergedCopies(tensors_.subspan(b, e - b))) {
      copyOne(dir_, shard_, host_, m);
      ++st_.copies;
    }
    ++st_.buckets;
    ++next_;
  }

  CopyDirection dir_;
  uint8_t* shard_;
  uint8_t* host_;
  std::span<const StagedTensor> tensors_;
  std::vector<size_t> bounds_;  // bucketBounds: first tensor of each bucket, then size()
  StageStats st_;
  size_t next_ = 0;  // buckets landed
};

class HostShardMemory final : public ShardMemory {
 public:
  explicit HostShardMemory(const workloads::SyntheticWeights& w) : w_(w) {}

  const char* kind() const override { return "host"; }

  Result<std::unique_ptr<ShardBuffer>> allocate(uint64_t bytes) override {
    return std::unique_ptr<ShardBuffer>(new HostShardBuffer(bytes));
  }

  Result<std::unique_ptr<HostPin>> pin(uint8_t* host, uint64_t bytes) override {
    if (!host && bytes > 0) return TIDE_ERROR(Code::kInvalidArgument, "pin: null host memory");
    return std::unique_ptr<HostPin>(new NoPin);
  }

  Status fill(ShardBuffer& dst, uint64_t offset, uint32_t tensor, const workloads::Box& box,
              int version) override {
    const uint64_t bytes = box.volume() * sizeof(uint16_t);
    const ShardRange r{offset, bytes};
    TIDE_RETURN_IF_ERROR(checkRanges({&r, 1}, dst.size()));
    auto* out = reinterpret_cast<uint16_t*>(buf(dst) + offset);
    return w_.fillBox(tensor, box, version, std::span(out, box.volume()));
  }

  Result<std::unique_ptr<StagingJob>> startStage(CopyDirection dir, ShardBuffer& shard,
                                                 uint8_t* host,
                                                 std::span<const StagedTensor> tensors,
                                                 const StagingOptions& o) override {
    TIDE_RETURN_IF_ERROR(checkStaged(tensors, shard.size()));
    StageStats st;
    for (const StagedTensor& t : tensors) st.bytes += t.bytes;
    if (o.bucketBytes == 0) {
      for (const StagedTensor& t : tensors) {
        copyOne(dir, buf(shard), host, t);
        st.copies += t.bytes > 0;
        ++st.buckets;
      }
      return finishedStagingJob(st, tensors.size());
    }
    return std::unique_ptr<StagingJob>(
        new HostBucketedJob(dir, buf(shard), host, tensors, o.bucketBytes, st));
  }

  Result<uint64_t> checksum(const ShardBuffer& src, std::span<const ShardRange> ranges) override {
    TIDE_RETURN_IF_ERROR(checkRanges(ranges, src.size()));
    if (ranges.size() == 1) return XXH3_64bits(buf(src) + ranges[0].offset, ranges[0].bytes);
    Xxh3State h;
    for (const ShardRange& r : ranges) h.update(buf(src) + r.offset, r.bytes);
    return h.digest();
  }

 private:
  // Only buffers this object allocated reach it (ShardBuffer's contract).
  static uint8_t* buf(const ShardBuffer& b) {
    return static_cast<const HostShardBuffer&>(b).data();
  }

  const workloads::SyntheticWeights& w_;
};

}  // namespace

std::unique_ptr<ShardMemory> makeHostShardMemory(const workloads::SyntheticWeights& weights) {
  return std::make_unique<HostShardMemory>(weights);
}

}  // namespace tide::gpu
