// The data path of RdmaTransport: slicing, posting with a bounded send queue
// and selective signalling, completion accounting, retries and waiting.

#include <arpa/inet.h>

#include <thread>

#include "engine/core/log.h"
#include "engine/transport/rdma/rdma_transport_impl.h"

namespace tide::transport::rdma {
namespace {

const char* opName(const Slice& s) {
  if (s.op == Op::kRead) return "READ";
  return s.withImm ? "WRITE_WITH_IMM" : "WRITE";
}

}  // namespace

constexpr double kHeartbeatSeconds = 0.1;
// Without a heartbeat for this long after a remote access error, the peer
// counts as gone (generous: a loaded, emulated guest stalls threads).
constexpr double kProbeSeconds = 1.5;

bool RdmaTransport::Batch::done() const {
  if (inFlight > 0 || probePeer >= 0) return false;
  if (!error.isOk()) return true;
  for (const auto& w : peers)
    if (!w.groups.empty()) return false;
  return true;
}

bool RdmaTransport::anyWorkingChannel(int peer) const {
  for (size_t i : senders_[static_cast<size_t>(peer)])
    if (!channels_[i].broken) return true;
  return false;
}

void RdmaTransport::progressLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  Deadline nextBeat = Deadline::after(0);
  bool beatFailed = false;
  while (!stop_) {
    bool busy = !batches_.empty();
    if (busy) {
      (void)progress();  // errors stay in batches / fatal_
    } else if (fatal_.isOk()) {
      // A rank with no batches of its own may still be a WRITE_WITH_IMM
      // target: take its notifications and repost the receives, or its
      // senders meet receiver-not-ready once the posted ones run out.
      for (auto& r : rails_) pollRecvCq(r);
    }
    lock.unlock();
    if (nextBeat.expired()) {
      // Liveness for peers that see a remote access error (region_registry.h).
      Status s = registry_->beat();
      if (!s.isOk() && !beatFailed)
        TIDE_LOG_WARN("rdma: heartbeat to the store failed: {}", s.message());
      beatFailed = !s.isOk();
      nextBeat = Deadline::after(kHeartbeatSeconds);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(busy ? 200 : 2000));
    lock.lock();
  }
}

Result<BatchId> RdmaTransport::submit(std::span<const Request> requests) {
  // Outside the lock: each target's deregistration epoch (one non-blocking
  // store read per peer), to re-check regions it deregistered since import.
  std::map<int32_t, int64_t> epochs;
  for (const Request& r : requests) {
    if (r.peer < 0 || r.peer >= worldSize_ || r.peer == rank_ || epochs.count(r.peer)) continue;
    auto e = registry_->epoch(r.peer);
    if (!e.isOk()) return e.status().withContext("region epoch of rank " + std::to_string(r.peer));
    epochs[r.peer] = *e;
  }
  std::lock_guard<std::mutex> lock(mu_);
  TIDE_RETURN_IF_ERROR(progress());
  // Validate everything first: an invalid request starts none of them.
  for (size_t i = 0; i < requests.size(); ++i) {
    const Request& r = requests[i];
    std::string where = "request " + std::to_string(i) + ": ";
    if (r.op != Op::kWrite && r.op != Op::kRead && r.op != Op::kWriteWithImm)
      return TIDE_ERROR(Code::kInvalidArgument, where + "unknown op");
    if (r.peer < 0 || r.peer >= worldSize_)
      return TIDE_ERROR(Code::kInvalidArgument, where + "peer " + std::to_string(r.peer) +
                                                    " outside world of " +
                                                    std::to_string(worldSize_));
    auto lit = regions_.find(r.localRegion);
    if (lit == regions_.end())
      return TIDE_ERROR(Code::kNotFound,
                        where + "no local region " + std::to_string(r.localRegion));
    uint64_t lsize = lit->second.info.size;
    if (r.length > lsize || r.localOffset > lsize - r.length)
      return TIDE_ERROR(Code::kOutOfRange, where + "local [" + std::to_string(r.localOffset) +
                                               ", +" + std::to_string(r.length) +
                                               ") outside region of " + std::to_string(lsize) +
                                               " bytes");
    auto rit = remotes_.find({r.peer, r.remoteRegion});
    if (rit == remotes_.end())
      return TIDE_ERROR(Code::kNotFound, where + "region " + std::to_string(r.remoteRegion) +
                                             " of rank " + std::to_string(r.peer) +
                                             " not imported");
    Imported& imp = rit->second;
    TIDE_RETURN_IF_ERROR(refreshImported(imp, epochs[r.peer]));
    if (!imp.verdict.status.isOk())
      return Status(imp.verdict.status.code(), where + imp.verdict.status.message(), __FILE__,
                    __LINE__);
    // Bounded by what the owner registered, whatever the descriptor claims.
    uint64_t rsize = std::min(imp.desc.size, imp.verdict.publishedSize);
    if (r.length > rsize || r.remoteOffset > rsize - r.length)
      return TIDE_ERROR(Code::kOutOfRange, where + "remote [" + std::to_string(r.remoteOffset) +
                                               ", +" + std::to_string(r.length) +
                                               ") outside rank " + std::to_string(r.peer) +
                                               "'s region of " + std::to_string(rsize) + " bytes");
    if (!anyWorkingChannel(r.peer))
      return TIDE_ERROR(Code::kUnavailable, where + "every QP to rank " + std::to_string(r.peer) +
                                                " is in the error state (" +
                                                channels_[senders_[r.peer][0]].brokenReason + ")");
  }

  BatchId id = nextBatch_++;
  Batch b;
  b.deadline = Deadline::after(opTimeout_);
  struct Cut {
    bool read = false;
    bool fresh = true;  // next request must start a new group
  };
  std::map<int32_t, Cut> cuts;
  for (const Request& r : requests) {
    if (r.length == 0 && r.op != Op::kWriteWithImm) continue;
    PeerWork* w = nullptr;
    for (auto& pw : b.peers)
      if (pw.peer == r.peer) w = &pw;
    if (w == nullptr) {
      b.peers.push_back(PeerWork{r.peer, {}, 0});
      w = &b.peers.back();
    }
    Cut& cut = cuts[r.peer];
    bool read = r.op == Op::kRead;
    if (cut.fresh || cut.read != read) {
      if (w->groups.empty() || !w->groups.back().empty()) w->groups.emplace_back();
      cut.fresh = false;
    }
    cut.read = read;

    Region& local = regions_.at(r.localRegion);
    const RemoteRegion& remote = remotes_.at({r.peer, r.remoteRegion}).desc;
    uint64_t lanes = senders_[static_cast<size_t>(r.peer)].size();
    uint64_t per =
        std::clamp<uint64_t>((r.length + lanes - 1) / lanes, opts_.sliceMin, opts_.sliceMax);
    uint64_t off = 0;
    do {
      uint64_t len = std::min(per, r.length - off);
      Slice s;
      s.batch = id;
      s.op = r.op;
      s.imm = r.imm;
      s.localRegion = r.localRegion;
      s.localAddr = reinterpret_cast<uint64_t>(local.info.addr) + r.localOffset + off;
      s.remoteAddr = remote.base + r.remoteOffset + off;
      s.length = len;
      s.peer = r.peer;
      s.remoteRegion = r.remoteRegion;
      off += len;
      bool tail = off >= r.length;
      if (tail && r.op == Op::kWriteWithImm) {
        // The notification goes last, after everything before it landed.
        s.withImm = true;
        if (!w->groups.back().empty()) w->groups.emplace_back();
        cut.fresh = true;
      }
      w->groups.back().push_back(s);
      ++local.inUse;
    } while (off < r.length);
  }
  batches_.emplace(id, std::move(b));
  schedule();
  return id;
}

Status RdmaTransport::postFor(Batch& b, PeerWork& w) {
  const auto& lanes = senders_[static_cast<size_t>(w.peer)];
  auto& queue = w.groups.front();
  std::vector<std::vector<PostItem>> chains(lanes.size());
  size_t cursor = rr_[static_cast<size_t>(w.peer)];
  bool anyWorking = false;
  while (!queue.empty()) {
    size_t found = lanes.size();
    for (size_t k = 0; k < lanes.size(); ++k) {
      size_t c = (cursor + k) % lanes.size();
      const Channel& ch = channels_[lanes[c]];
      anyWorking |= !ch.broken;
      if (ch.room() > chains[c].size()) {
        found = c;
        break;
      }
    }
    if (found == lanes.size()) break;
    cursor = (found + 1) % lanes.size();
    const Slice& s = queue.front();
    const Channel& ch = channels_[lanes[found]];
    auto rail = static_cast<size_t>(ch.rail);
    uint32_t lkey = regions_.at(s.localRegion).mrs[rail]->lkey;
    uint32_t rkey = remotes_.at({w.peer, s.remoteRegion}).desc.rkeys[rail];
    stats_.bytesPerDevice[rail] += s.length;
    chains[found].push_back(PostItem{s, lkey, rkey});
    queue.pop_front();
    anyWorking = true;
  }
  rr_[static_cast<size_t>(w.peer)] = cursor;
  if (!anyWorking && !queue.empty())
    return TIDE_ERROR(Code::kUnavailable, "every QP to rank " + std::to_string(w.peer) +
                                              " is in the error state (" +
                                              channels_[lanes[0]].brokenReason + ")");
  for (size_t c = 0; c < chains.size(); ++c) {
    if (chains[c].empty()) continue;
    size_t n = chains[c].size();
    Status st = postChain(channels_[lanes[c]], chains[c], opts_.qp.maxInline);
    size_t posted = n - chains[c].size();
    w.inFlight += posted;
    b.inFlight += posted;
    stats_.workRequestsPosted += posted;
    if (!st.isOk()) {
      for (auto it = chains[c].rbegin(); it != chains[c].rend(); ++it) queue.push_front(it->slice);
      failChannel(lanes[c], st.message());
    }
  }
  return Status::ok();
}

void RdmaTransport::schedule() {
  for (auto& [id, b] : batches_) {
    if (!b.error.isOk()) continue;
    for (auto& w : b.peers) {
      while (!w.groups.empty() && w.groups.front().empty() && w.inFlight == 0) w.groups.pop_front();
      if (w.groups.empty() || w.groups.front().empty()) continue;
      Status s = postFor(b, w);
      if (!s.isOk()) {
        failBatch(b, s);
        break;
      }
    }
  }
}

void RdmaTransport::failBatch(Batch& b, const Status& why) {
  if (b.error.isOk()) b.error = why;
  for (auto& w : b.peers) {
    for (auto& g : w.groups)
      for (auto& s : g)
        if (auto it = regions_.find(s.localRegion); it != regions_.end()) --it->second.inUse;
    w.groups.clear();
  }
}

void RdmaTransport::settle(const Slice& s, bool ok, const Status& why, bool retryable) {
  auto release = [&] {
    if (auto it = regions_.find(s.localRegion); it != regions_.end()) --it->second.inUse;
  };
  auto bit = batches_.find(s.batch);
  if (bit == batches_.end()) return release();
  Batch& b = bit->second;
  PeerWork* w = nullptr;
  for (auto& pw : b.peers)
    if (pw.peer == s.peer) w = &pw;
  --b.inFlight;
  if (w != nullptr) --w->inFlight;
  if (ok) return release();
  if (b.error.isOk() && retryable && !s.withImm && s.attempts < opts_.maxAttempts && w != nullptr &&
      !w->groups.empty() && anyWorkingChannel(s.peer)) {
    w->groups.front().push_front(s);
    ++stats_.slicesRetried;
    TIDE_LOG_INFO("rdma: retrying {} slice to rank {} on another QP ({})", opName(s), s.peer,
                  why.message());
    return;
  }
  release();
  failBatch(b, why);
}

void RdmaTransport::failChannel(size_t index, const std::string& reason) {
  Channel& ch = channels_[index];
  breakChannel(ch, reason);
  std::deque<InFlight> left;
  left.swap(ch.inFlight);
  Status why =
      TIDE_ERROR(Code::kUnavailable, "QP to rank " + std::to_string(ch.peer) + " on " +
                                         rails_[static_cast<size_t>(ch.rail)].device->name() +
                                         " failed: " + reason);
  for (auto& f : left) settle(f.slice, false, why, true);
}

void RdmaTransport::retire(Channel& ch, uint64_t seq, ibv_wc_status st) {
  size_t index = static_cast<size_t>(&ch - channels_.data());
  while (!ch.inFlight.empty() && ch.inFlight.front().seq <= seq) {
    InFlight f = std::move(ch.inFlight.front());
    ch.inFlight.pop_front();
    if (st == IBV_WC_SUCCESS || f.seq != seq) {
      settle(f.slice, true, Status::ok(), false);
      continue;
    }
    const std::string& dev = rails_[static_cast<size_t>(ch.rail)].device->name();
    Status why(codeForWc(st),
               std::string("RDMA ") + opName(f.slice) + " of " + std::to_string(f.slice.length) +
                   " bytes to rank " + std::to_string(ch.peer) + " (region " +
                   std::to_string(f.slice.remoteRegion) + ", QP " + std::to_string(ch.qp->qp_num) +
                   " on " + dev + ") failed: " + ibv_wc_status_str(st),
               __FILE__, __LINE__);
    if (st == IBV_WC_REM_ACCESS_ERR) why = explainRemoteAccess(f.slice, why);
    settle(f.slice, false, why, isRetryable(st));
  }
  if (st != IBV_WC_SUCCESS && !ch.broken)
    failChannel(index, std::string("completion error: ") + ibv_wc_status_str(st));
}

void RdmaTransport::pollSendCq(Rail& rail) {
  const int railIndex = static_cast<int>(&rail - rails_.data());
  ibv_wc wc[64];
  int n = 0;
  while ((n = ibv_poll_cq(rail.sendCq.get(), 64, wc)) > 0) {
    for (int i = 0; i < n; ++i) {
      auto it = channelByQpn_.find({railIndex, wc[i].qp_num});
      if (it != channelByQpn_.end()) retire(channels_[it->second], wc[i].wr_id, wc[i].status);
    }
  }
  if (n < 0 && fatal_.isOk())
    fatal_ = TIDE_ERROR(Code::kInternal, "ibv_poll_cq failed on " + rail.device->name());
}

void RdmaTransport::pollRecvCq(Rail& rail) {
  ibv_wc wc[64];
  int n = 0;
  while ((n = ibv_poll_cq(rail.recvCq.get(), 64, wc)) > 0) {
    for (int i = 0; i < n; ++i) {
      size_t idx = wc[i].wr_id;
      if (idx >= channels_.size()) continue;
      Channel& ch = channels_[idx];
      if (wc[i].status != IBV_WC_SUCCESS) {
        if (!ch.broken)
          failChannel(idx, std::string("receive completion: ") + ibv_wc_status_str(wc[i].status));
        continue;
      }
      if (wc[i].opcode == IBV_WC_RECV_RDMA_WITH_IMM)
        notifications_.push_back(Notification{ch.peer, ntohl(wc[i].imm_data)});
      if (Status s = postReceives(ch, idx, 1); !s.isOk() && !ch.broken)
        failChannel(idx, s.message());
    }
  }
  if (n < 0 && fatal_.isOk())
    fatal_ = TIDE_ERROR(Code::kInternal, "ibv_poll_cq (receive) failed on " + rail.device->name());
}

void RdmaTransport::expireBatches() {
  for (auto& [id, b] : batches_) {
    if (!b.error.isOk() || b.done() || !b.deadline.expired()) continue;
    failBatch(b, TIDE_ERROR(Code::kTimeout, "batch " + std::to_string(id) + ": " +
                                                std::to_string(b.inFlight) +
                                                " RDMA work requests unfinished after " +
                                                std::to_string(opTimeout_) + " s (peer silent?)"));
    // Stop the QPs still holding its work so nothing touches the memory later.
    for (size_t i = 0; i < channels_.size(); ++i) {
      bool holds = false;
      for (const auto& f : channels_[i].inFlight) holds |= f.slice.batch == id;
      if (holds) failChannel(i, "operation timeout");
    }
  }
}

Status RdmaTransport::progress() {
  if (!fatal_.isOk()) return fatal_;
  for (auto& r : rails_) {
    pollSendCq(r);
    pollRecvCq(r);
  }
  expireBatches();
  resolveProbes();
  schedule();
  return fatal_;
}

Status RdmaTransport::explainRemoteAccess(const Slice& s, Status why) {
  // Requests were checked against the owner's registration before posting,
  // so the NIC refusing one means that registration vanished: deregistered
  // in the meantime, or the owner exited and its kernel freed the MRs
  // (on rxe before its QPs). Only the first error of a batch is explained.
  auto bit = batches_.find(s.batch);
  if (bit == batches_.end() || !bit->second.error.isOk() || s.peer == rank_) return why;
  Batch& b = bit->second;
  std::string peer = "rank " + std::to_string(s.peer);
  auto isLive = registry_->live(s.peer, s.remoteRegion);
  if (isLive.isOk() && !*isLive)
    return TIDE_ERROR(Code::kNotFound, "region " + std::to_string(s.remoteRegion) + " of " + peer +
                                           " was deregistered with requests in flight (" +
                                           why.message() + ")");
  auto gone = registry_->gone(s.peer);
  if (gone.isOk() && *gone)
    return TIDE_ERROR(Code::kUnavailable, peer +
                                              " unreachable: it shut down with requests in "
                                              "flight (" +
                                              why.message() + ")");
  auto beats = registry_->beats(s.peer);
  b.probePeer = s.peer;
  b.probeBeat = beats.isOk() ? *beats : -1;
  b.probeDeadline = Deadline::after(kProbeSeconds);
  b.probeNextRead = Deadline::after(kHeartbeatSeconds);
  return why;
}

void RdmaTransport::resolveProbes() {
  for (auto& [id, b] : batches_) {
    if (b.probePeer < 0 || !b.probeNextRead.expired()) continue;
    b.probeNextRead = Deadline::after(kHeartbeatSeconds / 2);
    std::string peer = "rank " + std::to_string(b.probePeer);
    auto gone = registry_->gone(b.probePeer);
    auto beats = registry_->beats(b.probePeer);
    if (gone.isOk() && *gone) {
      b.error = TIDE_ERROR(Code::kUnavailable, peer +
                                                   " unreachable: it shut down with requests "
                                                   "in flight (" +
                                                   b.error.message() + ")");
    } else if (beats.isOk() && *beats > b.probeBeat) {
      b.error = Status(b.error.code(), b.error.message() + " (" + peer + " is alive)", __FILE__,
                       __LINE__);
    } else if (b.probeDeadline.expired()) {
      b.error = TIDE_ERROR(Code::kUnavailable,
                           peer +
                               " unreachable (remote access error after peer exit: no "
                               "heartbeat for " +
                               std::to_string(kProbeSeconds).substr(0, 3) + " s; " +
                               b.error.message() + ")");
    } else {
      continue;
    }
    b.probePeer = -1;
  }
}

Result<bool> RdmaTransport::waitUntil(std::unique_lock<std::mutex>& lock, const Deadline& deadline,
                                      const std::function<bool()>& done) {
  std::vector<ibv_comp_channel*> events;
  for (auto& r : rails_)
    if (r.events) events.push_back(r.events.get());
  while (true) {
    TIDE_RETURN_IF_ERROR(progress());
    if (done()) return true;
    if (deadline.expired()) return false;
    if (opts_.poll == PollMode::kBusy) {
      lock.unlock();
      std::this_thread::yield();
      lock.lock();
      continue;
    }
    for (auto& r : rails_) {
      TIDE_RETURN_IF_ERROR(armCq(r.sendCq.get()));
      TIDE_RETURN_IF_ERROR(armCq(r.recvCq.get()));
    }
    TIDE_RETURN_IF_ERROR(progress());  // completions that raced the arming
    if (done()) return true;
    double left = std::chrono::duration<double>(deadline.remaining()).count();
    lock.unlock();
    auto woke = waitForEvents(events, std::min(left, 0.05));
    lock.lock();
    TIDE_RETURN_IF_ERROR(woke.status());
  }
}

Result<bool> RdmaTransport::test(BatchId batch) {
  std::lock_guard<std::mutex> lock(mu_);
  return testLocked(batch);
}

Result<bool> RdmaTransport::testLocked(BatchId batch) {
  TIDE_RETURN_IF_ERROR(progress());
  auto it = batches_.find(batch);
  if (it == batches_.end())
    return TIDE_ERROR(Code::kNotFound, "unknown or finished batch " + std::to_string(batch));
  if (!it->second.done()) return false;
  Status e = it->second.error;
  batches_.erase(it);
  if (!e.isOk()) return e;
  return true;
}

Status RdmaTransport::wait(BatchId batch, double timeoutSeconds) {
  std::unique_lock<std::mutex> lock(mu_);
  if (batches_.find(batch) == batches_.end())
    return TIDE_ERROR(Code::kNotFound, "unknown or finished batch " + std::to_string(batch));
  TIDE_ASSIGN_OR_RETURN(bool finished, waitUntil(lock, Deadline::after(timeoutSeconds), [&] {
                          auto it = batches_.find(batch);
                          return it == batches_.end() || it->second.done();
                        }));
  if (!finished)
    return TIDE_ERROR(Code::kTimeout, "batch " + std::to_string(batch) + " not finished after " +
                                          std::to_string(timeoutSeconds) + " s");
  auto r = testLocked(batch);
  return r.isOk() ? Status::ok() : r.status();
}

Result<Notification> RdmaTransport::waitNotification(double timeoutSeconds) {
  std::unique_lock<std::mutex> lock(mu_);
  TIDE_ASSIGN_OR_RETURN(bool got, waitUntil(lock, Deadline::after(timeoutSeconds),
                                            [&] { return !notifications_.empty(); }));
  if (!got)
    return TIDE_ERROR(Code::kTimeout, "no WRITE_WITH_IMM notification within " +
                                          std::to_string(timeoutSeconds) + " s");
  Notification n = notifications_.front();
  notifications_.pop_front();
  return n;
}

}  // namespace tide::transport::rdma
