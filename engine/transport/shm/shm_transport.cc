#include "engine/transport/shm/shm_transport.h"

#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "engine/core/clock.h"
#include "engine/transport/shm/shm_control.h"
#include "engine/transport/shm/shm_copy.h"
#include "engine/transport/shm/shm_memory.h"
#include "engine/transport/shm/shm_peer_maps.h"
#include "engine/transport/shm/shm_segment.h"

namespace tide::transport::shm {
namespace {

constexpr uint64_t kSliceBytes = 4ull << 20;  // requests are split into slices for the workers
constexpr size_t kMaxSegmentRequests = 256;   // bounds the overlap scan per ordered segment
// Idle copy threads drop mappings of regions their owners deregistered this often.
constexpr auto kSweepInterval = std::chrono::milliseconds(100);

// How copies reach a peer's memory (TransportConfig::options["copy"]).
enum class CopyMode {
  kAuto,       // memcpy in-process, mapped memfd across processes, else process_vm
  kProcessVm,  // always process_vm_writev/readv (tests)
  kMap,        // map memfd-backed regions even of in-process peers (tests)
};

std::string bootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return id + "@" + host;
}

bool fits(uint64_t offset, uint64_t length, uint64_t size) {
  return offset <= size && length <= size - offset;
}

bool overlaps(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen) {
  return a < b + blen && b < a + alen;
}

struct Resolved {
  Request req;
  void* local = nullptr;  // local region base + localOffset
  uint64_t key = 0;       // key from the imported descriptor
};

struct Batch {
  std::vector<Resolved> reqs;
  std::vector<std::pair<size_t, size_t>> segments;  // [begin, end) request ranges run in order
  size_t segment = 0;
  size_t pending = 0;  // slices of the current segment not finished
  Status error;
  std::atomic<bool> failed{false};  // read by workers without the lock
  bool done = false;
};

struct Task {
  std::shared_ptr<Batch> batch;
  size_t req;
  uint64_t offset;  // within the request
  uint64_t length;
};

class ShmTransport final : public Transport {
 public:
  explicit ShmTransport(const TransportConfig& c)
      : rank_(c.rank),
        world_(c.worldSize),
        opTimeout_(c.opTimeoutSeconds),
        rng_(std::random_device{}()) {
    auto it = c.options.find("copy");
    if (it != c.options.end()) copyOption_ = it->second;
  }

  ~ShmTransport() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      for (auto& [id, b] : batches_)
        if (!b->done) {
          b->done = true;
          if (b->error.isOk())
            b->error =
                TIDE_ERROR(Code::kCancelled, "shm transport closed with the batch in flight");
        }
    }
    cv_.notify_all();
    for (auto& w : workers_) w.join();
    if (own_.get()) own_.get()->closed.store(1, std::memory_order_release);
    std::vector<uint32_t> ids;
    for (auto& [id, r] : local_) ids.push_back(id);
    for (uint32_t id : ids) (void)deregisterRegion(id);
    ctl_.reset();
    if (own_.get()) own_.wake();
  }

  Status init(const TransportConfig& c) {
    if (c.streams < 1 || c.streams > 64)
      return TIDE_ERROR(Code::kInvalidArgument,
                        "shm streams must be 1..64, got " + std::to_string(c.streams));
    if (copyOption_ == "process_vm")
      copyMode_ = CopyMode::kProcessVm;
    else if (copyOption_ == "map")
      copyMode_ = CopyMode::kMap;
    else if (copyOption_ != "auto")
      return TIDE_ERROR(
          Code::kInvalidArgument,
          "shm option copy must be auto, process_vm or map, got '" + copyOption_ + "'");
    allowSiblingAccess();
    TIDE_ASSIGN_OR_RETURN(own_, Segment::create(rank_));
    Store& store = *c.store;
    const std::string host = bootId();
    TIDE_RETURN_IF_ERROR(
        store.set("shm/" + std::to_string(rank_) + "/seg",
                  std::to_string(::getpid()) + " " + std::to_string(own_.fd()) + " " +
                      std::to_string(reinterpret_cast<uint64_t>(own_.get())) + " " + host));
    TIDE_ASSIGN_OR_RETURN(
        ctl_, ControlChannel::create(rank_, world_, store, c.connectTimeoutSeconds, opTimeout_));
    peers_.resize(world_);
    pids_.assign(world_, ::getpid());
    for (int p = 0; p < world_; ++p) {
      if (p == rank_) continue;
      auto v = store.get("shm/" + std::to_string(p) + "/seg", c.connectTimeoutSeconds);
      if (!v.isOk()) return v.status().withContext("shm: waiting for rank " + std::to_string(p));
      long long pid = 0, fd = 0;
      unsigned long long probe = 0;
      char peerHost[300] = {};
      if (std::sscanf(v->c_str(), "%lld %lld %llu %299s", &pid, &fd, &probe, peerHost) != 4)
        return TIDE_ERROR(Code::kInvalidArgument,
                          "malformed shm segment address of rank " + std::to_string(p));
      if (host != peerHost)
        return TIDE_ERROR(Code::kFailedPrecondition,
                          "shm backend needs every rank on one host: rank " + std::to_string(p) +
                              " runs on " + peerHost + ", this rank on " + host +
                              " (use tcp or rdma across hosts)");
      TIDE_RETURN_IF_ERROR(probePeerAccess(static_cast<pid_t>(pid), p, probe));
      TIDE_ASSIGN_OR_RETURN(peers_[p],
                            Segment::open(static_cast<pid_t>(pid), static_cast<int>(fd), p, probe));
      pids_[p] = static_cast<pid_t>(pid);
    }
    for (int i = 0; i < c.streams; ++i) workers_.emplace_back([this] { workLoop(); });
    return Status::ok();
  }

  Capabilities capabilities() const override {
    Capabilities caps;
    caps.backend = "shm";
    caps.writeWithImm = true;
    caps.devices = static_cast<uint32_t>(workers_.size());
    return caps;
  }
  int rank() const override { return rank_; }
  int worldSize() const override { return world_; }

  Result<LocalRegion> registerRegion(void* addr, uint64_t size, MemoryKind kind) override {
    if (kind != MemoryKind::kHost)
      return TIDE_ERROR(Code::kUnimplemented, "shm backend registers host memory only");
    if (addr == nullptr && size > 0)
      return TIDE_ERROR(Code::kInvalidArgument, "registerRegion: null address");
    SegmentLayout* l = own_.get();
    for (uint32_t n = 0; n < kMaxRegions; ++n) {
      uint32_t slot = (cursor_ + n) % kMaxRegions;
      if (l->regions[slot].state.load(std::memory_order_acquire) != 0) continue;
      cursor_ = slot + 1;
      uint32_t gen = static_cast<uint32_t>(nextGen_++ % ((1u << 20) - 1)) + 1;
      uint32_t id = gen * kMaxRegions + slot;
      RegionSlot& s = l->regions[slot];
      auto shared = findShared(addr, size);
      s.info = RegionInfo{reinterpret_cast<uint64_t>(addr),
                          size,
                          rng_(),
                          shared ? shared->fd : -1,
                          shared ? shared->fileOffset : 0,
                          shared ? shared->inode : 0};
      s.state.store((static_cast<uint64_t>(id) << 32) | kValidBit, std::memory_order_release);
      LocalRegion r;
      r.id = id;
      r.addr = addr;
      r.size = size;
      r.kind = kind;
      r.descriptor = RemoteRegion{rank_, id, size, s.info.addr, s.info.key, {}};
      std::lock_guard<std::mutex> lock(mu_);
      local_[id] = r;
      return r;
    }
    return TIDE_ERROR(Code::kResourceExhausted,
                      "shm: more than " + std::to_string(kMaxRegions) + " regions registered");
  }

  Status deregisterRegion(uint32_t id) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (local_.erase(id) == 0)
        return TIDE_ERROR(Code::kNotFound,
                          "deregisterRegion: region " + std::to_string(id) + " is not registered");
    }
    RegionSlot& s = own_.get()->regions[id % kMaxRegions];
    s.state.fetch_and(~kValidBit, std::memory_order_acq_rel);
    // Peers that pinned the slot before it was retired finish their copy.
    Deadline deadline = Deadline::after(opTimeout_);
    while ((s.state.load(std::memory_order_acquire) & kUsersMask) != 0) {
      if (deadline.expired())
        return TIDE_ERROR(Code::kUnavailable,
                          "region " + std::to_string(id) + " still in use by a peer after " +
                              std::to_string(opTimeout_) + " s (peer died mid-copy?); slot leaked");
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    s.info = RegionInfo{};
    s.state.store(0, std::memory_order_release);
    return Status::ok();
  }

  Result<HostMemory> allocateHost(uint64_t size) override { return allocateShared(size); }

  Status importRegion(const RemoteRegion& remote) override {
    if (remote.rank < 0 || remote.rank >= world_)
      return TIDE_ERROR(Code::kInvalidArgument, "importRegion: rank " +
                                                    std::to_string(remote.rank) +
                                                    " outside world of " + std::to_string(world_));
    std::lock_guard<std::mutex> lock(mu_);
    imported_[{remote.rank, remote.id}] = remote;
    return Status::ok();
  }

  Result<BatchId> submit(std::span<const Request> requests) override;
  Result<bool> test(BatchId batch) override;
  Status wait(BatchId batch, double timeoutSeconds) override;

  Result<Notification> waitNotification(double timeoutSeconds) override {
    TIDE_ASSIGN_OR_RETURN(NotificationEntry e, own_.pop(timeoutSeconds));
    return Notification{e.peer, e.imm};
  }

  Status send(int peer, uint32_t tag, std::span<const uint8_t> bytes) override {
    return ctl_->send(peer, tag, bytes);
  }
  Result<std::vector<uint8_t>> recv(int peer, uint32_t tag, double timeoutSeconds) override {
    return ctl_->recv(peer, tag, timeoutSeconds);
  }

 private:
  const Segment& segmentOf(int peer) const { return peer == rank_ ? own_ : peers_[peer]; }
  void workLoop();
  Status runTask(const Task& t);
  // Copies one slice into/out of the pinned remote region `slot`.
  Status copySlice(const Task& t, const RegionInfo& slot);
  // Unmaps peers' regions that were deregistered or whose peer is gone.
  void sweepMappings();
  // Queues the slices of the batch's current segment (mu_ held).
  void startSegment(const std::shared_ptr<Batch>& b);
  // Marks a slice finished; moves on to the next segment or completes (mu_ held).
  void finishSlice(const std::shared_ptr<Batch>& b, Status s);

  int rank_;
  int world_;
  double opTimeout_;
  std::string copyOption_ = "auto";
  CopyMode copyMode_ = CopyMode::kAuto;
  std::mt19937_64 rng_;
  Segment own_;
  std::vector<Segment> peers_;
  std::vector<pid_t> pids_;
  std::unique_ptr<ControlChannel> ctl_;
  PeerMappings mappings_;
  uint32_t cursor_ = 0;
  uint64_t nextGen_ = 0;

  std::mutex mu_;
  std::condition_variable cv_;      // workers: tasks queued or stop
  std::condition_variable doneCv_;  // waiters: a batch finished
  bool stop_ = false;
  std::map<uint32_t, LocalRegion> local_;
  std::map<std::pair<int, uint32_t>, RemoteRegion> imported_;
  std::map<BatchId, std::shared_ptr<Batch>> batches_;
  std::deque<Task> queue_;
  BatchId nextBatch_ = 1;
  std::vector<std::thread> workers_;
};

Result<BatchId> ShmTransport::submit(std::span<const Request> requests) {
  sweepMappings();  // busy copy threads never sweep; stale mappings go here then
  auto b = std::make_shared<Batch>();
  b->reqs.reserve(requests.size());
  std::lock_guard<std::mutex> lock(mu_);
  if (stop_) return TIDE_ERROR(Code::kCancelled, "shm transport is closing");
  for (size_t i = 0; i < requests.size(); ++i) {
    const Request& r = requests[i];
    std::string where = "request " + std::to_string(i) + ": ";
    if (r.op != Op::kWrite && r.op != Op::kRead && r.op != Op::kWriteWithImm)
      return TIDE_ERROR(Code::kInvalidArgument, where + "unknown op");
    auto lit = local_.find(r.localRegion);
    if (lit == local_.end())
      return TIDE_ERROR(Code::kNotFound, where + "local region " + std::to_string(r.localRegion) +
                                             " is not registered");
    if (!fits(r.localOffset, r.length, lit->second.size))
      return TIDE_ERROR(Code::kOutOfRange, where + "local range [" + std::to_string(r.localOffset) +
                                               ", +" + std::to_string(r.length) +
                                               ") outside region of " +
                                               std::to_string(lit->second.size) + " bytes");
    if (r.peer < 0 || r.peer >= world_)
      return TIDE_ERROR(Code::kInvalidArgument, where + "peer " + std::to_string(r.peer) +
                                                    " outside world of " + std::to_string(world_));
    auto rit = imported_.find({r.peer, r.remoteRegion});
    if (rit == imported_.end())
      return TIDE_ERROR(Code::kNotFound, where + "region " + std::to_string(r.remoteRegion) +
                                             " of rank " + std::to_string(r.peer) +
                                             " was not imported");
    b->reqs.push_back({r, static_cast<char*>(lit->second.addr) + r.localOffset, rit->second.key});
  }
  // Requests run in parallel slices, except where order matters: a request that
  // overlaps an earlier one of the same segment (and one of them writes that
  // memory) starts a new segment; WRITE_WITH_IMM is a segment of its own, so its
  // notification follows all earlier data.
  size_t begin = 0;
  for (size_t i = 0; i < b->reqs.size(); ++i) {
    const Request& r = b->reqs[i].req;
    bool split = i - begin >= kMaxSegmentRequests || r.op == Op::kWriteWithImm ||
                 (i > begin && b->reqs[i - 1].req.op == Op::kWriteWithImm);
    for (size_t j = begin; j < i && !split; ++j) {
      const Request& q = b->reqs[j].req;
      bool remoteWrite = r.op != Op::kRead || q.op != Op::kRead;
      bool localWrite = r.op == Op::kRead || q.op == Op::kRead;
      split = (remoteWrite && r.peer == q.peer && r.remoteRegion == q.remoteRegion &&
               overlaps(r.remoteOffset, r.length, q.remoteOffset, q.length)) ||
              (localWrite && r.localRegion == q.localRegion &&
               overlaps(r.localOffset, r.length, q.localOffset, q.length));
    }
    if (split && i > begin) {
      b->segments.push_back({begin, i});
      begin = i;
    }
  }
  if (begin < b->reqs.size()) b->segments.push_back({begin, b->reqs.size()});
  BatchId id = nextBatch_++;
  batches_[id] = b;
  if (b->segments.empty())
    b->done = true;
  else
    startSegment(b);
  return id;
}

void ShmTransport::startSegment(const std::shared_ptr<Batch>& b) {
  auto [begin, end] = b->segments[b->segment];
  for (size_t i = begin; i < end; ++i) {
    uint64_t len = b->reqs[i].req.length;
    uint64_t off = 0;
    do {  // zero-length requests still get one slice: their checks (and imm) run
      uint64_t n = std::min(kSliceBytes, len - off);
      queue_.push_back(Task{b, i, off, n});
      ++b->pending;
      off += n;
    } while (off < len);
  }
  cv_.notify_all();
}

void ShmTransport::finishSlice(const std::shared_ptr<Batch>& b, Status s) {
  if (!s.isOk() && b->error.isOk()) {
    b->error = std::move(s);
    b->failed.store(true, std::memory_order_relaxed);
  }
  if (--b->pending > 0 || b->done) return;
  if (b->error.isOk()) {
    auto [begin, end] = b->segments[b->segment];
    const Resolved& last = b->reqs[end - 1];
    if (last.req.op == Op::kWriteWithImm)
      b->error = segmentOf(last.req.peer).post(rank_, last.req.imm, opTimeout_);
  }
  if (b->error.isOk() && ++b->segment < b->segments.size()) {
    startSegment(b);
    return;
  }
  b->done = true;
  doneCv_.notify_all();
}

Status ShmTransport::runTask(const Task& t) {
  const Resolved& r = t.batch->reqs[t.req];
  const int peer = r.req.peer;
  if (t.batch->failed.load(std::memory_order_relaxed))
    return Status::ok();  // an earlier slice failed: skip the rest
  if (peer != rank_ && ctl_->peerGone(peer))
    return TIDE_ERROR(Code::kUnavailable,
                      "rank " + std::to_string(peer) + " closed its shm transport or exited");
  const Segment& seg = segmentOf(peer);
  if (seg.get()->closed.load(std::memory_order_acquire))
    return TIDE_ERROR(Code::kUnavailable,
                      "rank " + std::to_string(peer) + " closed its shm transport");
  RegionInfo local;
  if (!own_.pin(r.req.localRegion, local))
    return TIDE_ERROR(Code::kNotFound, "local region " + std::to_string(r.req.localRegion) +
                                           " was deregistered with a request in flight");
  RegionInfo slot;
  Status s;
  if (!seg.pin(r.req.remoteRegion, slot)) {
    s = TIDE_ERROR(Code::kNotFound, "region " + std::to_string(r.req.remoteRegion) + " of rank " +
                                        std::to_string(peer) + " is not registered there");
  } else {
    // The whole request is checked, not only this slice, so a bad request
    // leaves every target byte untouched.
    if (slot.key != r.key)
      s = TIDE_ERROR(Code::kPermissionDenied, "wrong access key for region " +
                                                  std::to_string(r.req.remoteRegion) + " of rank " +
                                                  std::to_string(peer));
    else if (!fits(r.req.remoteOffset, r.req.length, slot.size))
      s = TIDE_ERROR(Code::kOutOfRange,
                     "remote range [" + std::to_string(r.req.remoteOffset) + ", +" +
                         std::to_string(r.req.length) + ") outside region " +
                         std::to_string(r.req.remoteRegion) + " of rank " + std::to_string(peer) +
                         " (" + std::to_string(slot.size) + " bytes)");
    else
      s = copySlice(t, slot);
    seg.unpin(r.req.remoteRegion);
  }
  own_.unpin(r.req.localRegion);
  return s;
}

Status ShmTransport::copySlice(const Task& t, const RegionInfo& slot) {
  const Resolved& r = t.batch->reqs[t.req];
  const int peer = r.req.peer;
  const Direction dir = r.req.op == Op::kRead ? Direction::kFromPeer : Direction::kToPeer;
  char* local = static_cast<char*>(r.local) + t.offset;
  const uint64_t remoteOffset = r.req.remoteOffset + t.offset;
  const bool otherProcess = pids_[peer] != ::getpid();
  const bool mapIt =
      slot.memfd >= 0 && slot.size > 0 && t.length > 0 &&
      ((copyMode_ == CopyMode::kAuto && otherProcess) || copyMode_ == CopyMode::kMap);
  if (!mapIt)
    return copyWithPeer(dir, pids_[peer], peer, local, slot.addr + remoteOffset, t.length,
                        copyMode_ == CopyMode::kProcessVm);
  // The slot is pinned: the region stays registered (and its memfd open in
  // the owner) until the copy is done.
  TIDE_ASSIGN_OR_RETURN(auto m, mappings_.get(pids_[peer], peer, r.req.remoteRegion, slot));
  char* remote = m->base + remoteOffset;
  if (dir == Direction::kToPeer)
    std::memcpy(remote, local, t.length);
  else
    std::memcpy(local, remote, t.length);
  return Status::ok();
}

void ShmTransport::sweepMappings() {
  mappings_.sweep([this](int peer, uint32_t id) {
    if (peer != rank_ && ctl_->peerGone(peer)) return false;
    const Segment& seg = segmentOf(peer);
    return !seg.get()->closed.load(std::memory_order_acquire) && seg.registered(id);
  });
}

void ShmTransport::workLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    if (!cv_.wait_for(lock, kSweepInterval, [&] { return stop_ || !queue_.empty(); })) {
      lock.unlock();
      sweepMappings();
      lock.lock();
      continue;
    }
    if (stop_) return;
    Task t = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    Status s = runTask(t);
    lock.lock();
    finishSlice(t.batch, std::move(s));
  }
}

Result<bool> ShmTransport::test(BatchId batch) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = batches_.find(batch);
  if (it == batches_.end())
    return TIDE_ERROR(Code::kNotFound, "unknown batch " + std::to_string(batch));
  if (!it->second->done) return false;
  Status s = it->second->error;
  batches_.erase(it);
  if (!s.isOk()) return s;
  return true;
}

Status ShmTransport::wait(BatchId batch, double timeoutSeconds) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = batches_.find(batch);
  if (it == batches_.end())
    return TIDE_ERROR(Code::kNotFound, "unknown batch " + std::to_string(batch));
  std::shared_ptr<Batch> b = it->second;
  Deadline deadline = Deadline::after(timeoutSeconds);
  while (!b->done) {
    if (doneCv_.wait_until(lock, deadline.when()) == std::cv_status::timeout && !b->done)
      return TIDE_ERROR(Code::kTimeout, "batch " + std::to_string(batch) + " not done within " +
                                            std::to_string(timeoutSeconds) + " s");
  }
  batches_.erase(batch);
  return b->error;
}

}  // namespace

Result<std::unique_ptr<Transport>> createShmTransport(const TransportConfig& config) {
  auto t = std::make_unique<ShmTransport>(config);
  TIDE_RETURN_IF_ERROR(t->init(config).withContext("shm rank " + std::to_string(config.rank)));
  return std::unique_ptr<Transport>(std::move(t));
}

}  // namespace tide::transport::shm
