#include "engine/transport/tcp/tcp_transport.h"

#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <utility>

#include "engine/core/log.h"
#include "engine/core/units.h"
#include "engine/transport/mailbox.h"
#include "engine/transport/region_table.h"
#include "engine/transport/tcp/tcp_in_stream.h"
#include "engine/transport/tcp/tcp_out_stream.h"
#include "engine/transport/tcp/tcp_rendezvous.h"

namespace tide::transport::tcp {
namespace {

constexpr uint64_t kDefaultSliceBytes = 4ull << 20;

class TcpTransport final : public Transport, public StreamHost {
 public:
  TcpTransport(const TransportConfig& c, uint64_t sliceBytes)
      : config_(c),
        sliceBytes_(sliceBytes),
        regions_(c.rank),
        mailbox_(c.worldSize),
        peerError_(c.worldSize) {}

  ~TcpTransport() override {
    stopping_ = true;
    // Wake every thread first, then join them one stream at a time.
    for (auto& peer : out_)
      for (auto& s : peer) s->kill(TIDE_ERROR(Code::kCancelled, "transport is shutting down"));
    for (auto& peer : in_)
      for (auto& s : peer) s->kill();
    // Threads may still call back into this object until all are joined.
    for (auto& peer : out_)
      for (auto& s : peer) s->join();
    for (auto& peer : in_)
      for (auto& s : peer) s->join();
    out_.clear();
    in_.clear();
  }

  Status connect() {
    uint64_t bufBytes = 0;
    if (auto it = config_.options.find("socket_buffer_bytes"); it != config_.options.end()) {
      TIDE_ASSIGN_OR_RETURN(bufBytes, parseSize(it->second));
    }
    TIDE_ASSIGN_OR_RETURN(PeerSockets sockets, rendezvous(config_, bufBytes));
    out_.resize(config_.worldSize);
    in_.resize(config_.worldSize);
    rr_ = std::vector<std::atomic<uint64_t>>(config_.worldSize);
    openConnections_.assign(config_.worldSize, 0);
    for (int p = 0; p < config_.worldSize; ++p) {
      openConnections_[p] =
          static_cast<int>(sockets.outgoing[p].size() + sockets.incoming[p].size());
      for (auto& fd : sockets.outgoing[p])
        out_[p].push_back(std::make_unique<OutStream>(std::move(fd), p, *this));
      for (auto& fd : sockets.incoming[p])
        in_[p].push_back(std::make_unique<InStream>(std::move(fd), p, *this));
    }
    for (auto& peer : out_)
      for (auto& s : peer) s->start();
    for (auto& peer : in_)
      for (auto& s : peer) s->start();
    return Status::ok();
  }

  Capabilities capabilities() const override {
    Capabilities c;
    c.backend = "tcp";
    c.writeWithImm = true;
    c.crossHost = true;
    return c;
  }
  int rank() const override { return config_.rank; }
  int worldSize() const override { return config_.worldSize; }

  Result<LocalRegion> registerRegion(void* addr, uint64_t size, MemoryKind kind) override {
    if (kind != MemoryKind::kHost)
      return TIDE_ERROR(Code::kUnimplemented, "tcp backend registers host memory only");
    return regions_.add(addr, size, kind);
  }
  Status deregisterRegion(uint32_t id) override { return regions_.remove(id); }

  Status importRegion(const RemoteRegion& remote) override {
    if (remote.rank < 0 || remote.rank >= config_.worldSize)
      return TIDE_ERROR(Code::kInvalidArgument,
                        "region descriptor names rank " + std::to_string(remote.rank) +
                            " outside world of " + std::to_string(config_.worldSize));
    std::lock_guard lock(mu_);
    imported_[{remote.rank, remote.id}] = remote;
    return Status::ok();
  }

  Result<BatchId> submit(std::span<const Request> requests) override;
  Result<bool> test(BatchId batch) override;
  Status wait(BatchId batch, double timeoutSeconds) override;
  Result<Notification> waitNotification(double timeoutSeconds) override;
  Status send(int peer, uint32_t tag, std::span<const uint8_t> bytes) override;
  Result<std::vector<uint8_t>> recv(int peer, uint32_t tag, double timeoutSeconds) override;

  // StreamHost
  void sliceDone(const Slice& slice, const Status& status) override {
    std::vector<Slice> next = slice.batch->complete(slice, status);
    if (!next.empty()) dispatch(std::move(next));
  }
  void peerFailed(int peer, const Status& status) override;
  void connectionClosed(int peer) override {
    bool last;
    {
      std::lock_guard lock(mu_);
      last = --openConnections_[peer] == 0;
    }
    if (last) peerFailed(peer, TIDE_ERROR(Code::kUnavailable, "it closed all its connections"));
  }
  void notify(int peer, uint32_t imm) override {
    std::lock_guard lock(mu_);
    notifications_.push_back(Notification{peer, imm});
    cv_.notify_all();
  }
  void deliverControl(int peer, uint32_t tag, std::vector<uint8_t> bytes) override {
    mailbox_.put(peer, tag, std::move(bytes));
  }
  RegionTable& regions() override { return regions_; }
  const std::atomic<bool>& stopping() const override { return stopping_; }
  double opTimeoutSeconds() const override { return config_.opTimeoutSeconds; }

 private:
  Result<ResolvedRequest> resolve(const Request& r);
  Status runLocal(const ResolvedRequest& r);
  void dispatch(std::vector<Slice> slices);
  Status peerStatus(int peer);

  const TransportConfig config_;
  const uint64_t sliceBytes_;
  RegionTable regions_;
  std::vector<std::vector<std::unique_ptr<OutStream>>> out_;
  std::vector<std::vector<std::unique_ptr<InStream>>> in_;
  std::vector<std::atomic<uint64_t>> rr_;  // per-peer stripe cursor
  std::atomic<bool> stopping_{false};
  Mailbox mailbox_;  // control messages received, closed with peerError_

  std::mutex mu_;  // guards everything below
  std::condition_variable cv_;
  std::map<std::pair<int, uint32_t>, RemoteRegion> imported_;
  std::map<BatchId, std::shared_ptr<BatchState>> batches_;
  BatchId nextBatch_ = 1;
  std::deque<Notification> notifications_;
  std::vector<Status> peerError_;
  std::vector<int> openConnections_;  // per peer, incoming and outgoing
};

Status TcpTransport::peerStatus(int peer) {
  std::lock_guard lock(mu_);
  return peerError_[peer];
}

void TcpTransport::peerFailed(int peer, const Status& status) {
  {
    std::lock_guard lock(mu_);
    if (!peerError_[peer].isOk()) return;
    peerError_[peer] =
        TIDE_ERROR(status.code() == Code::kTimeout ? Code::kTimeout : Code::kUnavailable,
                   "rank " + std::to_string(peer) + " is gone: " + status.message());
    mailbox_.close(peer, peerError_[peer]);
    cv_.notify_all();
  }
  // Every request to the peer fails now rather than one timeout per stream.
  if (!stopping_.load() && peer < static_cast<int>(out_.size()))
    for (auto& s : out_[peer]) s->kill(peerStatus(peer));
}

Result<ResolvedRequest> TcpTransport::resolve(const Request& r) {
  ResolvedRequest rr{r, nullptr, 0};
  if (r.op != Op::kWrite && r.op != Op::kRead && r.op != Op::kWriteWithImm)
    return TIDE_ERROR(Code::kInvalidArgument, "unknown op " + std::to_string(int(r.op)));
  if (r.peer < 0 || r.peer >= config_.worldSize)
    return TIDE_ERROR(Code::kInvalidArgument, "peer " + std::to_string(r.peer) +
                                                  " outside world of " +
                                                  std::to_string(config_.worldSize));
  TIDE_ASSIGN_OR_RETURN(rr.local, regions_.localRange(r.localRegion, r.localOffset, r.length));
  std::lock_guard lock(mu_);
  auto it = imported_.find({r.peer, r.remoteRegion});
  if (it == imported_.end())
    return TIDE_ERROR(Code::kNotFound, "region " + std::to_string(r.remoteRegion) + " of rank " +
                                           std::to_string(r.peer) + " was not imported");
  const RemoteRegion& rem = it->second;
  if (r.remoteOffset > rem.size || r.length > rem.size - r.remoteOffset)
    return TIDE_ERROR(Code::kOutOfRange, "access [" + std::to_string(r.remoteOffset) + ", +" +
                                             std::to_string(r.length) + ") is outside region " +
                                             std::to_string(r.remoteRegion) + " of " +
                                             std::to_string(rem.size) + " bytes on rank " +
                                             std::to_string(r.peer));
  if (!peerError_[r.peer].isOk()) return peerError_[r.peer];
  rr.key = rem.key;
  return rr;
}

// A request to this rank: same checks as a peer's, done in place.
Status TcpTransport::runLocal(const ResolvedRequest& rr) {
  const Request& r = rr.request;
  TIDE_ASSIGN_OR_RETURN(RegionLease lease,
                        regions_.acquire(r.remoteRegion, r.remoteOffset, r.length, rr.key));
  if (r.length > 0) {
    if (r.op == Op::kRead)
      std::memmove(rr.local, lease.data(), r.length);
    else
      std::memmove(lease.data(), rr.local, r.length);
  }
  if (r.op == Op::kWriteWithImm) notify(config_.rank, r.imm);
  return Status::ok();
}

void TcpTransport::dispatch(std::vector<Slice> slices) {
  if (slices.empty()) return;
  int peer = slices.front().batch->peerOf(slices.front().group);
  auto& streams = out_[peer];
  std::vector<std::vector<Slice>> perStream(streams.size());
  uint64_t cursor = rr_[peer].fetch_add(slices.size());
  for (size_t i = 0; i < slices.size(); ++i)
    perStream[(cursor + i) % streams.size()].push_back(std::move(slices[i]));
  for (size_t s = 0; s < streams.size(); ++s)
    if (!perStream[s].empty()) streams[s]->enqueue(std::move(perStream[s]));
}

Result<BatchId> TcpTransport::submit(std::span<const Request> requests) {
  std::vector<ResolvedRequest> remote, local;
  for (size_t i = 0; i < requests.size(); ++i) {
    auto rr = resolve(requests[i]);
    if (!rr.isOk())
      return rr.status().withContext("request " + std::to_string(i) + " (" +
                                     describeRequest(requests[i]) + ")");
    (requests[i].peer == config_.rank ? local : remote).push_back(std::move(rr).value());
  }
  auto batch = BatchState::plan(remote, sliceBytes_);
  for (const auto& rr : local) {
    Status s = runLocal(rr);
    if (!s.isOk()) {
      batch->fail(s.withContext(describeRequest(rr.request)));
      break;
    }
  }
  BatchId id;
  {
    std::lock_guard lock(mu_);
    id = nextBatch_++;
    batches_[id] = batch;
  }
  for (uint32_t g = 0; g < batch->groups(); ++g) dispatch(batch->start(g));
  return id;
}

Result<bool> TcpTransport::test(BatchId id) {
  std::lock_guard lock(mu_);
  auto it = batches_.find(id);
  if (it == batches_.end())
    return TIDE_ERROR(Code::kNotFound, "batch " + std::to_string(id) + " is unknown or finished");
  if (!it->second->done()) return false;
  Status s = it->second->status();
  batches_.erase(it);
  if (!s.isOk()) return s;
  return true;
}

Status TcpTransport::wait(BatchId id, double timeoutSeconds) {
  std::shared_ptr<BatchState> batch;
  {
    std::lock_guard lock(mu_);
    auto it = batches_.find(id);
    if (it == batches_.end())
      return TIDE_ERROR(Code::kNotFound, "batch " + std::to_string(id) + " is unknown or finished");
    batch = it->second;
  }
  if (!batch->waitFor(timeoutSeconds))
    return TIDE_ERROR(Code::kTimeout, "batch " + std::to_string(id) + " not finished after " +
                                          std::to_string(timeoutSeconds) + " s");
  std::lock_guard lock(mu_);
  batches_.erase(id);
  return batch->status();
}

Result<Notification> TcpTransport::waitNotification(double timeoutSeconds) {
  std::unique_lock lock(mu_);
  if (!cv_.wait_for(lock, std::chrono::duration<double>(std::max(0.0, timeoutSeconds)),
                    [&] { return !notifications_.empty(); }))
    return TIDE_ERROR(Code::kTimeout,
                      "no notification within " + std::to_string(timeoutSeconds) + " s");
  Notification n = notifications_.front();
  notifications_.pop_front();
  return n;
}

Status TcpTransport::send(int peer, uint32_t tag, std::span<const uint8_t> bytes) {
  if (peer < 0 || peer >= config_.worldSize)
    return TIDE_ERROR(Code::kInvalidArgument, "send to rank " + std::to_string(peer) +
                                                  " outside world of " +
                                                  std::to_string(config_.worldSize));
  if (bytes.size() > kMaxControlBytes)
    return TIDE_ERROR(Code::kInvalidArgument, "control message of " + std::to_string(bytes.size()) +
                                                  " bytes exceeds the limit");
  if (peer == config_.rank) {
    deliverControl(peer, tag, std::vector<uint8_t>(bytes.begin(), bytes.end()));
    return Status::ok();
  }
  TIDE_RETURN_IF_ERROR(peerStatus(peer));
  // A one-slice batch on stream 0 keeps messages to a peer in order.
  Slice s;
  s.kind = Slice::Kind::kControl;
  s.immValue = tag;
  s.payload = std::make_shared<std::vector<uint8_t>>(bytes.begin(), bytes.end());
  ResolvedRequest rr;
  rr.request.peer = peer;
  rr.request.length = 0;
  auto batch = BatchState::plan(std::span(&rr, 1), sliceBytes_);
  std::vector<Slice> slices = batch->start(0);
  s.batch = slices[0].batch;
  s.group = 0;
  out_[peer][0]->enqueue({std::move(s)});
  if (!batch->waitFor(config_.opTimeoutSeconds))
    return TIDE_ERROR(Code::kTimeout, "control message to rank " + std::to_string(peer) +
                                          " not sent within " +
                                          std::to_string(config_.opTimeoutSeconds) + " s");
  Status st = batch->status();
  if (!st.isOk())
    return Status(st.code(), "control message to rank " + std::to_string(peer) + " tag " +
                                 std::to_string(tag) + ": " + st.message());
  return Status::ok();
}

Result<std::vector<uint8_t>> TcpTransport::recv(int peer, uint32_t tag, double timeoutSeconds) {
  if (peer < 0 || peer >= config_.worldSize)
    return TIDE_ERROR(Code::kInvalidArgument, "recv from rank " + std::to_string(peer) +
                                                  " outside world of " +
                                                  std::to_string(config_.worldSize));
  return mailbox_.take(peer, tag, timeoutSeconds);
}

}  // namespace

Result<std::unique_ptr<Transport>> createTcpTransport(const TransportConfig& config) {
  uint64_t sliceBytes = kDefaultSliceBytes;
  if (auto it = config.options.find("slice_bytes"); it != config.options.end()) {
    TIDE_ASSIGN_OR_RETURN(sliceBytes, parseSize(it->second));
    if (sliceBytes == 0)
      return TIDE_ERROR(Code::kInvalidArgument, "tcp option slice_bytes must be positive");
  }
  if (config.opTimeoutSeconds <= 0 || config.connectTimeoutSeconds <= 0)
    return TIDE_ERROR(Code::kInvalidArgument, "tcp timeouts must be positive");
  auto t = std::make_unique<TcpTransport>(config, sliceBytes);
  TIDE_RETURN_IF_ERROR(t->connect());
  return std::unique_ptr<Transport>(std::move(t));
}

}  // namespace tide::transport::tcp
