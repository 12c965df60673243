#include "engine/data/buffer_pool.h"

#include <sys/mman.h>

#include <algorithm>
#include <string>

#include "engine/core/clock.h"
#include "engine/core/errno_status.h"
#include "engine/core/log.h"
#include "engine/core/units.h"

namespace tide::data {

Lease& Lease::operator=(Lease&& o) noexcept {
  if (this != &o) {
    release();
    pool_ = std::exchange(o.pool_, nullptr);
    cls_ = o.cls_;
    index_ = o.index_;
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    regionId_ = o.regionId_;
    regionOffset_ = o.regionOffset_;
  }
  return *this;
}

void Lease::release() {
  if (pool_ == nullptr) return;
  pool_->giveBack(cls_, index_);
  pool_ = nullptr;
  data_ = nullptr;
  size_ = 0;
}

Result<std::unique_ptr<BufferPool>> BufferPool::create(transport::Transport* transport,
                                                       PoolConfig config) {
  if (config.classes.empty())
    return TIDE_ERROR(Code::kInvalidArgument, "buffer pool needs at least one size class");
  auto classes = config.classes;
  std::sort(classes.begin(), classes.end(),
            [](const SizeClass& a, const SizeClass& b) { return a.bufferBytes < b.bufferBytes; });
  std::unique_ptr<BufferPool> pool(new BufferPool(transport, config));
  for (const SizeClass& sc : classes) {
    if (sc.bufferBytes == 0 || sc.count == 0)
      return TIDE_ERROR(Code::kInvalidArgument, "size class with zero size or count");
    auto c = std::make_unique<Class>();
    c->bufferBytes = (sc.bufferBytes + 63) / 64 * 64;
    c->count = sc.count;
    uint64_t total = c->bufferBytes * sc.count;
    int flags = MAP_PRIVATE | MAP_ANONYMOUS | (config.populate ? MAP_POPULATE : 0);
    void* p = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, flags, -1, 0);
    if (p == MAP_FAILED)
      return TIDE_ERRNO("mapping a " + formatBytes(total) + " buffer-pool slab")
          .withContext("buffer pool");
    c->slab = Mapping(p, total);
    if (transport != nullptr) {
      auto r = transport::Registration::borrow(*transport, p, total);
      if (!r.isOk()) return r.status().withContext("registering a buffer-pool slab");
      c->registration = std::move(r).value();
      c->region = c->registration.region();
    } else {
      c->region.addr = p;
      c->region.size = total;
    }
    c->free.reserve(sc.count);
    for (uint32_t i = sc.count; i > 0; --i) c->free.push_back(i - 1);
    pool->classes_.push_back(std::move(c));
  }
  return pool;
}

BufferPool::~BufferPool() {
  for (auto& c : classes_) {
    size_t out;
    {
      std::lock_guard<std::mutex> lock(c->mu);
      out = c->count - c->free.size();
    }
    if (out != 0) {
      TIDE_LOG_ERROR("buffer pool destroyed with {} leases of {} out; keeping their memory", out,
                     formatBytes(c->bufferBytes));
      // Leak on purpose: a lease still points into the slab.
      new Mapping(std::move(c->slab));
      new transport::Registration(std::move(c->registration));
      continue;
    }
    if (c->registration.registered()) {
      Status s = c->registration.release();
      if (!s.isOk()) TIDE_LOG_WARN("deregistering a pool slab: {}", s.toString());
    }
  }
}

Result<Lease> BufferPool::acquire(uint64_t bytes) {
  return acquire(bytes, config_.policy, config_.waitTimeoutSeconds);
}

Result<Lease> BufferPool::acquire(uint64_t bytes, ExhaustedPolicy policy, double timeoutSeconds) {
  uint32_t ci = 0;
  while (ci < classes_.size() && classes_[ci]->bufferBytes < bytes) ++ci;
  if (ci == classes_.size())
    return TIDE_ERROR(Code::kInvalidArgument, "buffer of " + std::to_string(bytes) +
                                                  " bytes requested; largest class is " +
                                                  std::to_string(largestBuffer()) + " bytes");
  Class& c = *classes_[ci];
  std::unique_lock<std::mutex> lock(c.mu);
  if (c.free.empty()) {
    if (policy == ExhaustedPolicy::kFail) {
      ++c.failures;
      return TIDE_ERROR(Code::kResourceExhausted, "buffer pool exhausted: all " +
                                                      std::to_string(c.count) + " buffers of " +
                                                      formatBytes(c.bufferBytes) + " are leased");
    }
    ++c.waits;
    ++c.waiters;
    Deadline deadline = Deadline::after(timeoutSeconds);
    while (c.free.empty() && !deadline.expired()) c.cv.wait_until(lock, deadline.when());
    --c.waiters;
    if (c.free.empty()) {
      ++c.failures;
      return TIDE_ERROR(Code::kTimeout, "buffer pool exhausted: no " + formatBytes(c.bufferBytes) +
                                            " buffer released within " +
                                            std::to_string(timeoutSeconds) + " s");
    }
  }
  uint32_t index = c.free.back();
  c.free.pop_back();
  ++c.acquires;
  lock.unlock();
  Lease l;
  l.pool_ = this;
  l.cls_ = ci;
  l.index_ = index;
  l.regionOffset_ = static_cast<uint64_t>(index) * c.bufferBytes;
  l.data_ = static_cast<uint8_t*>(c.slab.data()) + l.regionOffset_;
  l.size_ = c.bufferBytes;
  l.regionId_ = c.region.id;
  return l;
}

void BufferPool::giveBack(uint32_t cls, uint32_t index) {
  Class& c = *classes_[cls];
  std::lock_guard<std::mutex> lock(c.mu);
  c.free.push_back(index);
  if (c.waiters != 0) c.cv.notify_one();
}

Result<Location> BufferPool::locate(const void* p, uint64_t len) const {
  auto addr = reinterpret_cast<uintptr_t>(p);
  for (const auto& c : classes_) {
    auto base = reinterpret_cast<uintptr_t>(c->slab.data());
    if (addr >= base && addr - base <= c->slab.size() && len <= c->slab.size() - (addr - base)) {
      if (!c->registration.registered())
        return TIDE_ERROR(Code::kFailedPrecondition, "pool memory is not registered");
      return Location{c->region.id, addr - base, &c->region.descriptor};
    }
  }
  return TIDE_ERROR(Code::kNotFound, "memory is not in this buffer pool");
}

PoolStats BufferPool::stats() const {
  PoolStats s;
  for (const auto& c : classes_) {
    std::lock_guard<std::mutex> lock(c->mu);
    uint64_t out = c->count - c->free.size();
    s.capacityBytes += c->bufferBytes * c->count;
    s.leasedBytes += c->bufferBytes * out;
    s.leasesOut += out;
    s.acquires += c->acquires;
    s.waits += c->waits;
    s.failures += c->failures;
  }
  return s;
}

uint64_t BufferPool::largestBuffer() const {
  return classes_.empty() ? 0 : classes_.back()->bufferBytes;
}

}  // namespace tide::data
