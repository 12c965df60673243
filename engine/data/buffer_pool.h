#pragma once
// BufferPool: size-class slabs of transfer buffers, each slab registered with
// the transport once at creation, handed out as RAII leases. Capacity is
// bounded: when a class is exhausted, acquire() waits up to a timeout or
// fails at once, per policy. The pool must outlive its leases (a pool
// destroyed with leases out keeps their memory mapped and logs an error).

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/core/fd.h"
#include "engine/core/status.h"
#include "engine/transport/registration.h"
#include "engine/transport/transport.h"

namespace tide::data {

enum class ExhaustedPolicy : uint8_t { kWait = 0, kFail = 1 };

struct SizeClass {
  uint64_t bufferBytes = 0;  // rounded up to 64 bytes
  uint32_t count = 0;
};

struct PoolConfig {
  std::vector<SizeClass> classes;
  ExhaustedPolicy policy = ExhaustedPolicy::kWait;
  double waitTimeoutSeconds = 10;
  bool populate = true;  // prefault slabs so first use is not a page-fault storm
};

class BufferPool;

class Lease {
 public:
  Lease() = default;
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  Lease(Lease&& o) noexcept { *this = std::move(o); }
  Lease& operator=(Lease&& o) noexcept;
  ~Lease() { release(); }

  bool valid() const { return pool_ != nullptr; }
  uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  uint32_t regionId() const { return regionId_; }          // transport region of the slab
  uint64_t regionOffset() const { return regionOffset_; }  // where this buffer starts in it
  void release();

 private:
  friend class BufferPool;
  BufferPool* pool_ = nullptr;
  uint32_t cls_ = 0;
  uint32_t index_ = 0;
  uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  uint32_t regionId_ = 0;
  uint64_t regionOffset_ = 0;
};

struct PoolStats {
  uint64_t capacityBytes = 0;
  uint64_t leasedBytes = 0;
  uint64_t leasesOut = 0;
  uint64_t acquires = 0;
  uint64_t waits = 0;     // acquires that had to wait for a release
  uint64_t failures = 0;  // exhausted (fail policy) or timed out
};

// Where a byte range sits in registered memory.
struct Location {
  uint32_t regionId = 0;
  uint64_t offset = 0;
  const transport::RemoteRegion* descriptor = nullptr;
};

class BufferPool {
 public:
  // transport may be null: a local pool (nothing registered).
  static Result<std::unique_ptr<BufferPool>> create(transport::Transport* transport,
                                                    PoolConfig config);
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;
  ~BufferPool();

  // A buffer of at least `bytes` from the smallest class that fits.
  Result<Lease> acquire(uint64_t bytes);
  // Like acquire() with an explicit policy/timeout for this call.
  Result<Lease> acquire(uint64_t bytes, ExhaustedPolicy policy, double timeoutSeconds);
  // The registered region holding [p, p+len), if it is one of this pool's slabs.
  Result<Location> locate(const void* p, uint64_t len) const;
  PoolStats stats() const;
  uint64_t largestBuffer() const;
  transport::Transport* transport() const { return transport_; }

 private:
  struct Class {
    uint64_t bufferBytes = 0;
    uint32_t count = 0;
    Mapping slab;
    transport::LocalRegion region;         // the slab (registered or not)
    transport::Registration registration;  // after slab: deregistered before it is unmapped
    std::mutex mu;
    std::condition_variable cv;
    std::vector<uint32_t> free;  // stack of free buffer indices
    uint32_t waiters = 0;
    uint64_t acquires = 0, waits = 0, failures = 0;  // under mu
  };
  BufferPool(transport::Transport* t, PoolConfig c) : transport_(t), config_(std::move(c)) {}
  void giveBack(uint32_t cls, uint32_t index);
  friend class Lease;

  transport::Transport* transport_;
  PoolConfig config_;
  std::vector<std::unique_ptr<Class>> classes_;  // ascending buffer size
};

}  // namespace tide::data
