#pragma once
// A decorator that wraps any Transport and injects faults, for tests of the
// layers above (executor retries, verification, fault handling). Requests
// are counted from 1 across all batches submitted through the decorator.

#include <map>
#include <memory>
#include <vector>

#include "engine/core/clock.h"
#include "engine/transport/registration.h"
#include "engine/transport/transport.h"

namespace tide::transport::fakes {

struct FaultPlan {
  uint64_t failRequest = 0;  // that request is not run; its batch fails (kUnavailable)
  uint64_t dropRequest = 0;  // that request is silently not run; its batch succeeds
  // One byte of what that request moves arrives flipped (its local region
  // must have been registered through the decorator).
  uint64_t corruptRequest = 0;
  double delaySeconds = 0;    // every batch completes no sooner than this after submit
  uint64_t dieAtRequest = 0;  // the inner transport is destroyed when that request comes
};

class FaultyTransport final : public Transport {
 public:
  FaultyTransport(std::unique_ptr<Transport> inner, FaultPlan plan);
  ~FaultyTransport() override;

  // Destroys the inner transport now: peers see this rank gone, and every
  // later call here fails with kUnavailable.
  void die();
  bool dead() const { return inner_ == nullptr; }
  uint64_t requestsSeen() const { return seen_; }
  // Requests submitted whose local region was registered at `base`.
  uint64_t requestsFrom(const void* base) const {
    auto it = fromBase_.find(static_cast<const char*>(base));
    return it == fromBase_.end() ? 0 : it->second;
  }

  Capabilities capabilities() const override;
  int rank() const override { return rank_; }
  int worldSize() const override { return worldSize_; }
  Result<LocalRegion> registerRegion(void* addr, uint64_t size,
                                     MemoryKind kind = MemoryKind::kHost) override;
  Status deregisterRegion(uint32_t id) override;
  Status importRegion(const RemoteRegion& remote) override;
  Result<BatchId> submit(std::span<const Request> requests) override;
  Result<bool> test(BatchId batch) override;
  Status wait(BatchId batch, double timeoutSeconds) override;
  Result<Notification> waitNotification(double timeoutSeconds) override;
  Status send(int peer, uint32_t tag, std::span<const uint8_t> bytes) override;
  Result<std::vector<uint8_t>> recv(int peer, uint32_t tag, double timeoutSeconds) override;

 private:
  struct Pending {
    BatchId inner = 0;
    bool hasInner = false;
    Status injected;
    Clock::time_point readyAt;
    char* flipAfter = nullptr;  // READ corruption: flip when done
  };
  Status gone() const;
  Status patchWrite(const Request& r, uint8_t flipped, std::vector<Request>& out);
  Result<bool> finish(BatchId id, Pending& p, Result<bool> innerDone);

  std::unique_ptr<Transport> inner_;
  const FaultPlan plan_;
  const int rank_;
  const int worldSize_;
  Capabilities caps_;
  uint64_t seen_ = 0;
  struct Extent {
    char* base = nullptr;
    uint64_t size = 0;
  };
  std::map<uint32_t, Extent> localBase_;
  std::map<const char*, uint64_t> fromBase_;  // requestsFrom
  std::map<BatchId, Pending> pending_;
  BatchId next_ = 1;
  // The flipped byte a corrupted WRITE sends instead of the caller's.
  uint8_t patchByte_ = 0;
  Registration patch_;
};

}  // namespace tide::transport::fakes
