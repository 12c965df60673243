#include "tests/fakes/faulty_transport.h"

#include <thread>

namespace tide::transport::fakes {

FaultyTransport::FaultyTransport(std::unique_ptr<Transport> inner, FaultPlan plan)
    : inner_(std::move(inner)),
      plan_(plan),
      rank_(inner_->rank()),
      worldSize_(inner_->worldSize()),
      caps_(inner_->capabilities()) {}

FaultyTransport::~FaultyTransport() {
  die();
}

// The patch is deregistered while the inner transport lives; its memory is
// freed only with the decorator, after the inner transport (which may still
// be sending from it) is gone.
void FaultyTransport::die() {
  patch_.reset();
  inner_.reset();
}

Status FaultyTransport::gone() const {
  return TIDE_ERROR(Code::kUnavailable,
                    "rank " + std::to_string(rank_) + " is gone (injected fault: transport died)");
}

Capabilities FaultyTransport::capabilities() const {
  return caps_;
}

Result<LocalRegion> FaultyTransport::registerRegion(void* addr, uint64_t size, MemoryKind kind) {
  if (dead()) return gone();
  TIDE_ASSIGN_OR_RETURN(LocalRegion r, inner_->registerRegion(addr, size, kind));
  localBase_[r.id] = Extent{static_cast<char*>(addr), size};
  return r;
}

Status FaultyTransport::deregisterRegion(uint32_t id) {
  if (auto it = localBase_.find(id); it != localBase_.end()) {
    auto inside = [&](const char* p) {
      return p >= it->second.base && p < it->second.base + it->second.size;
    };
    for (auto& [batch, p] : pending_) {
      if (p.flipAfter != nullptr && inside(p.flipAfter)) p.flipAfter = nullptr;
    }
    localBase_.erase(it);
  }
  if (dead()) return gone();
  return inner_->deregisterRegion(id);
}

Status FaultyTransport::importRegion(const RemoteRegion& remote) {
  if (dead()) return gone();
  return inner_->importRegion(remote);
}

Result<BatchId> FaultyTransport::submit(std::span<const Request> requests) {
  if (dead()) return gone();
  Pending p;
  p.readyAt = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(plan_.delaySeconds));
  std::vector<Request> keep;
  for (const Request& r : requests) {
    uint64_t n = ++seen_;
    if (auto base = localBase_.find(r.localRegion); base != localBase_.end()) {
      ++fromBase_[base->second.base];
    }
    if (n == plan_.dieAtRequest) {
      die();
      p.injected = gone();
      break;
    }
    if (n == plan_.failRequest) {
      if (p.injected.isOk())
        p.injected = TIDE_ERROR(Code::kUnavailable,
                                "injected fault: request " + std::to_string(n) + " failed");
      continue;
    }
    if (n == plan_.dropRequest) continue;
    if (n == plan_.corruptRequest && r.length > 0) {
      auto base = localBase_.find(r.localRegion);
      if (base != localBase_.end()) {
        char* byte = base->second.base + r.localOffset + r.length / 2;
        if (r.op == Op::kRead) {
          p.flipAfter = byte;
        } else {
          TIDE_RETURN_IF_ERROR(patchWrite(r, static_cast<uint8_t>(*byte ^ 0xFF), keep));
          continue;
        }
      }
    }
    keep.push_back(r);
  }
  if (!dead()) {
    auto inner = inner_->submit(keep);
    if (!inner.isOk()) return inner.status();
    p.inner = *inner;
    p.hasInner = true;
  }
  BatchId id = next_++;
  pending_[id] = p;
  return id;
}

// The write goes out in up to three requests, its middle byte sent flipped
// from the patch region. The caller's source is never touched: other batches
// in flight may be reading the same bytes.
Status FaultyTransport::patchWrite(const Request& r, uint8_t flipped, std::vector<Request>& out) {
  if (!patch_.registered()) {
    TIDE_ASSIGN_OR_RETURN(patch_, Registration::borrow(*inner_, &patchByte_, 1));
  }
  patchByte_ = flipped;  // FaultPlan corrupts one request: never rewritten in flight
  const uint64_t k = r.length / 2;
  const uint64_t after = r.length - k - 1;
  Request piece = r;
  piece.op = Op::kWrite;
  piece.length = k;
  if (k > 0) out.push_back(piece);
  piece.localRegion = patch_.id();
  piece.localOffset = 0;
  piece.remoteOffset = r.remoteOffset + k;
  piece.length = 1;
  if (after == 0) piece.op = r.op;  // the notification rides on the last piece
  out.push_back(piece);
  if (after > 0) {
    piece = r;
    piece.localOffset = r.localOffset + k + 1;
    piece.remoteOffset = r.remoteOffset + k + 1;
    piece.length = after;
    out.push_back(piece);
  }
  return Status::ok();
}

Result<bool> FaultyTransport::finish(BatchId id, Pending& p, Result<bool> innerDone) {
  if (innerDone.isOk() && !*innerDone) return false;
  if (Clock::now() < p.readyAt) return false;
  if (p.flipAfter != nullptr && innerDone.isOk()) *p.flipAfter ^= 0xFF;
  Status injected = p.injected;
  pending_.erase(id);
  if (!injected.isOk()) return injected;
  if (!innerDone.isOk()) return innerDone.status();
  return true;
}

Result<bool> FaultyTransport::test(BatchId batch) {
  auto it = pending_.find(batch);
  if (it == pending_.end()) return TIDE_ERROR(Code::kNotFound, "unknown batch");
  Pending& p = it->second;
  Result<bool> innerDone = true;
  if (p.hasInner) {
    if (dead()) {
      innerDone = gone();
    } else {
      if (Clock::now() < p.readyAt) return false;  // leave the inner batch pending too
      innerDone = inner_->test(p.inner);
      if (!innerDone.isOk() || *innerDone) p.hasInner = false;
    }
  }
  return finish(batch, p, innerDone);
}

Status FaultyTransport::wait(BatchId batch, double timeoutSeconds) {
  auto it = pending_.find(batch);
  if (it == pending_.end()) return TIDE_ERROR(Code::kNotFound, "unknown batch");
  Deadline deadline = Deadline::after(timeoutSeconds);
  std::this_thread::sleep_until(std::min(deadline.when(), it->second.readyAt));
  if (it->second.hasInner && !dead()) {
    double left = std::chrono::duration<double>(deadline.remaining()).count();
    Status s = inner_->wait(it->second.inner, left);
    if (s.code() == Code::kTimeout) return s;
    it->second.hasInner = false;
    auto r = finish(batch, it->second, s.isOk() ? Result<bool>(true) : Result<bool>(s));
    return r.status();
  }
  auto r = test(batch);
  if (r.isOk() && !*r) return TIDE_ERROR(Code::kTimeout, "batch not finished (injected delay)");
  return r.status();
}

Result<Notification> FaultyTransport::waitNotification(double timeoutSeconds) {
  if (dead()) return gone();
  return inner_->waitNotification(timeoutSeconds);
}

Status FaultyTransport::send(int peer, uint32_t tag, std::span<const uint8_t> bytes) {
  if (dead()) return gone();
  return inner_->send(peer, tag, bytes);
}

Result<std::vector<uint8_t>> FaultyTransport::recv(int peer, uint32_t tag, double timeoutSeconds) {
  if (dead()) return gone();
  return inner_->recv(peer, tag, timeoutSeconds);
}

}  // namespace tide::transport::fakes
