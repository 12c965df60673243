#include "tests/fakes/fake_transport.h"

#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>

#include "engine/transport/mailbox.h"
#include "engine/transport/region_table.h"

namespace tide::transport::fakes {

// What all ranks of a fake world share.
class FakeFabric {
 public:
  explicit FakeFabric(int worldSize) : ranks_(worldSize) {
    for (int r = 0; r < worldSize; ++r) {
      ranks_[r].regions = std::make_unique<RegionTable>(r);
      ranks_[r].mailbox = std::make_unique<Mailbox>(worldSize);
    }
  }
  struct Rank {
    std::unique_ptr<RegionTable> regions;
    bool alive = true;
    std::deque<Notification> notifications;
    std::unique_ptr<Mailbox> mailbox;  // control messages to this rank
  };
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Rank> ranks_;
};

namespace {

class FakeTransport final : public Transport {
 public:
  FakeTransport(std::shared_ptr<FakeFabric> fabric, int rank)
      : fabric_(std::move(fabric)), rank_(rank) {}
  ~FakeTransport() override {
    {
      std::lock_guard lock(fabric_->mu);
      fabric_->ranks_[rank_].alive = false;
      fabric_->cv.notify_all();
      const Status gone =
          TIDE_ERROR(Code::kUnavailable, "rank " + std::to_string(rank_) + " is gone");
      for (auto& r : fabric_->ranks_) r.mailbox->close(rank_, gone);
    }
    // Waits for accesses in progress, as a real target's shutdown does.
    for (uint32_t id : ids_) (void)self().regions->remove(id);
  }

  Capabilities capabilities() const override {
    Capabilities c;
    c.backend = "fake";
    c.writeWithImm = true;
    return c;
  }
  int rank() const override { return rank_; }
  int worldSize() const override { return static_cast<int>(fabric_->ranks_.size()); }

  Result<LocalRegion> registerRegion(void* addr, uint64_t size, MemoryKind kind) override {
    if (kind != MemoryKind::kHost)
      return TIDE_ERROR(Code::kUnimplemented, "fake transport registers host memory only");
    TIDE_ASSIGN_OR_RETURN(LocalRegion r, self().regions->add(addr, size, kind));
    ids_.push_back(r.id);
    return r;
  }
  Status deregisterRegion(uint32_t id) override {
    std::erase(ids_, id);
    return self().regions->remove(id);
  }
  Status importRegion(const RemoteRegion& remote) override {
    if (remote.rank < 0 || remote.rank >= worldSize())
      return TIDE_ERROR(Code::kInvalidArgument, "descriptor of a rank outside the world");
    imported_[{remote.rank, remote.id}] = remote;
    return Status::ok();
  }

  Result<BatchId> submit(std::span<const Request> requests) override {
    std::vector<std::pair<char*, uint64_t>> resolved;
    for (const Request& r : requests) {
      if (r.peer < 0 || r.peer >= worldSize())
        return TIDE_ERROR(Code::kInvalidArgument, "peer outside the world");
      TIDE_ASSIGN_OR_RETURN(char* local,
                            self().regions->localRange(r.localRegion, r.localOffset, r.length));
      auto it = imported_.find({r.peer, r.remoteRegion});
      if (it == imported_.end())
        return TIDE_ERROR(Code::kNotFound, "region " + std::to_string(r.remoteRegion) +
                                               " of rank " + std::to_string(r.peer) +
                                               " was not imported");
      if (r.remoteOffset > it->second.size || r.length > it->second.size - r.remoteOffset)
        return TIDE_ERROR(Code::kOutOfRange,
                          "access outside imported region " + std::to_string(r.remoteRegion));
      resolved.emplace_back(local, it->second.key);
    }
    Status result;
    for (size_t i = 0; i < requests.size() && result.isOk(); ++i)
      result = run(requests[i], resolved[i].first, resolved[i].second);
    BatchId id = next_++;
    done_[id] = result;
    return id;
  }
  Result<bool> test(BatchId batch) override {
    auto it = done_.find(batch);
    if (it == done_.end()) return TIDE_ERROR(Code::kNotFound, "unknown batch");
    Status s = it->second;
    done_.erase(it);
    if (!s.isOk()) return s;
    return true;
  }
  Status wait(BatchId batch, double) override {
    auto r = test(batch);
    return r.status();
  }

  Result<Notification> waitNotification(double timeoutSeconds) override {
    std::unique_lock lock(fabric_->mu);
    auto& q = self().notifications;
    if (!fabric_->cv.wait_for(lock, std::chrono::duration<double>(timeoutSeconds),
                              [&] { return !q.empty(); }))
      return TIDE_ERROR(Code::kTimeout, "no notification");
    Notification n = q.front();
    q.pop_front();
    return n;
  }
  Status send(int peer, uint32_t tag, std::span<const uint8_t> bytes) override {
    if (peer < 0 || peer >= worldSize())
      return TIDE_ERROR(Code::kInvalidArgument, "send to a rank outside the world");
    std::lock_guard lock(fabric_->mu);
    auto& dst = fabric_->ranks_[peer];
    if (!dst.alive)
      return TIDE_ERROR(Code::kUnavailable, "rank " + std::to_string(peer) + " is gone");
    dst.mailbox->put(rank_, tag, std::vector<uint8_t>(bytes.begin(), bytes.end()));
    return Status::ok();
  }
  Result<std::vector<uint8_t>> recv(int peer, uint32_t tag, double timeoutSeconds) override {
    if (peer < 0 || peer >= worldSize())
      return TIDE_ERROR(Code::kInvalidArgument, "recv from a rank outside the world");
    return self().mailbox->take(peer, tag, timeoutSeconds);
  }

 private:
  FakeFabric::Rank& self() { return fabric_->ranks_[rank_]; }

  Status run(const Request& r, char* local, uint64_t key) {
    auto& target = fabric_->ranks_[r.peer];
    Result<RegionLease> lease = TIDE_ERROR(Code::kUnavailable, "");
    {
      std::lock_guard lock(fabric_->mu);
      if (!target.alive)
        return TIDE_ERROR(Code::kUnavailable, "rank " + std::to_string(r.peer) + " is gone");
      lease = target.regions->acquire(r.remoteRegion, r.remoteOffset, r.length, key);
    }
    TIDE_RETURN_IF_ERROR(lease.status());
    if (r.length > 0) {
      if (r.op == Op::kRead)
        std::memmove(local, lease->data(), r.length);
      else
        std::memmove(lease->data(), local, r.length);
    }
    if (r.op == Op::kWriteWithImm) {
      std::lock_guard lock(fabric_->mu);
      target.notifications.push_back(Notification{rank_, r.imm});
      fabric_->cv.notify_all();
    }
    return Status::ok();
  }

  std::shared_ptr<FakeFabric> fabric_;
  const int rank_;
  std::vector<uint32_t> ids_;
  std::map<std::pair<int, uint32_t>, RemoteRegion> imported_;
  std::map<BatchId, Status> done_;
  BatchId next_ = 1;
};

}  // namespace

std::vector<std::unique_ptr<Transport>> createFakeWorld(int worldSize) {
  auto fabric = std::make_shared<FakeFabric>(worldSize);
  std::vector<std::unique_ptr<Transport>> out;
  for (int r = 0; r < worldSize; ++r) out.push_back(std::make_unique<FakeTransport>(fabric, r));
  return out;
}

}  // namespace tide::transport::fakes
