#include "engine/transport/tcp/tcp_out_stream.h"

#include <string>

#include "engine/core/log.h"

namespace tide::transport::tcp {

OutStream::OutStream(UniqueFd fd, int peer, StreamHost& host)
    : conn_(std::move(fd), peer, &host.stopping()), peer_(peer), host_(host) {}

OutStream::~OutStream() {
  kill(TIDE_ERROR(Code::kCancelled, "transport is shutting down"));
  join();
}

void OutStream::join() {
  if (sender_.joinable()) sender_.join();
  if (receiver_.joinable()) receiver_.join();
}

void OutStream::start() {
  sender_ = std::thread([this] { sendLoop(); });
  receiver_ = std::thread([this] { receiveLoop(); });
}

void OutStream::enqueue(std::vector<Slice> slices) {
  {
    std::lock_guard lock(mu_);
    if (!dead_) {
      if (inFlight_.empty() && queue_.empty()) lastActivity_ = nowSeconds();
      for (Slice& s : slices) queue_.push_back(std::move(s));
      cv_.notify_one();
      return;
    }
  }
  failSlices(slices);
}

void OutStream::kill(const Status& why) {
  {
    std::lock_guard lock(mu_);
    if (!dead_) {
      dead_ = true;
      deadStatus_ = why;
    }
    cv_.notify_all();
  }
  conn_.shutdown();
}

void OutStream::failSlices(std::vector<Slice>& slices) {
  Status why;
  {
    std::lock_guard lock(mu_);
    why = deadStatus_;
  }
  for (const Slice& s : slices) host_.sliceDone(s, why);
  slices.clear();
}

void OutStream::sendLoop() {
  const double timeout = host_.opTimeoutSeconds();
  while (true) {
    Slice s;
    uint64_t seq = 0;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return dead_ || !queue_.empty(); });
      if (dead_) break;
      s = std::move(queue_.front());
      queue_.pop_front();
      if (s.kind != Slice::Kind::kControl) {
        seq = nextSeq_++;
        if (inFlight_.empty()) lastActivity_ = nowSeconds();
        inFlight_.push_back(InFlight{s, seq, false});
      }
    }
    WireHeader h;
    h.region = s.region;
    h.offset = s.offset;
    h.key = s.key;
    h.seq = seq;
    h.imm = s.immValue;
    iovec iov[2] = {{&h, sizeof h}, {nullptr, 0}};
    switch (s.kind) {
      case Slice::Kind::kWrite:
        h.type = static_cast<uint8_t>(MsgType::kWrite);
        h.flags = s.imm ? kFlagImm : 0;
        h.length = s.length;
        iov[1] = {s.local, s.length};
        break;
      case Slice::Kind::kRead:
        h.type = static_cast<uint8_t>(MsgType::kReadReq);
        h.length = s.length;
        break;
      case Slice::Kind::kControl:
        h.type = static_cast<uint8_t>(MsgType::kControl);
        h.length = s.payload->size();
        iov[1] = {s.payload->data(), s.payload->size()};
        break;
    }
    Status st = conn_.sendAll(iov, 2, IoWait{timeout, nullptr});
    if (!st.isOk()) kill(st.withContext("rank " + std::to_string(peer_)));
    if (s.kind == Slice::Kind::kControl) {
      host_.sliceDone(s, st.isOk() ? st : deadStatus());
      continue;
    }
    bool resolveNow = false;
    Status outcome;
    {
      std::lock_guard lock(mu_);
      lastActivity_ = nowSeconds();
      bool found = false;
      for (auto it = inFlight_.rbegin(); it != inFlight_.rend(); ++it) {
        if (it->seq != seq) continue;
        found = true;
        // The receiver is gone: nobody else will resolve this slice.
        if (!st.isOk() || receiverDone_) {
          inFlight_.erase(std::next(it).base());
          resolveNow = true;
          outcome = deadStatus_;
        } else {
          it->sent = true;
        }
        break;
      }
      if (auto e = early_.find(seq); !found && e != early_.end()) {
        // Answered while sendmsg was still returning: resolve it here, after
        // this thread is done with the slice's memory.
        resolveNow = true;
        outcome = std::move(e->second);
        early_.erase(e);
      }
    }
    if (resolveNow) host_.sliceDone(s, outcome);
  }
  std::vector<Slice> left;
  {
    std::lock_guard lock(mu_);
    for (Slice& s : queue_) left.push_back(std::move(s));
    queue_.clear();
  }
  failSlices(left);
}

Status OutStream::deadStatus() {
  std::lock_guard lock(mu_);
  return deadStatus_;
}

Status OutStream::idleCheck() {
  std::lock_guard lock(mu_);
  if (dead_) return deadStatus_;
  if (inFlight_.empty()) return Status::ok();
  double quiet = nowSeconds() - std::max(lastActivity_, conn_.lastReceive());
  if (quiet > host_.opTimeoutSeconds())
    return TIDE_ERROR(Code::kTimeout, "rank " + std::to_string(peer_) + " did not answer for " +
                                          std::to_string(quiet) + " s with " +
                                          std::to_string(inFlight_.size()) + " requests in flight");
  return Status::ok();
}

Result<bool> OutStream::receiveOne() {
  WireHeader h;
  const double timeout = host_.opTimeoutSeconds();
  TIDE_ASSIGN_OR_RETURN(
      bool more,
      conn_.recvMessageStart(&h, sizeof h, IoWait{timeout, [this] { return idleCheck(); }}));
  if (!more) {
    std::lock_guard lock(mu_);
    // Closed with answers owed: those requests are lost, the peer failed.
    if (!inFlight_.empty())
      return TIDE_ERROR(Code::kUnavailable,
                        "rank " + std::to_string(peer_) + " closed the connection with " +
                            std::to_string(inFlight_.size()) + " requests unanswered");
    return false;
  }
  auto proto = [&](const std::string& what) {
    return TIDE_ERROR(Code::kDataLoss,
                      "protocol error from rank " + std::to_string(peer_) + ": " + what);
  };
  InFlight f;
  bool pending = false;
  {
    std::lock_guard lock(mu_);
    pending = !inFlight_.empty();
    if (pending) f = inFlight_.front();
  }
  const PendingRequest oldest{f.seq, f.slice.kind == Slice::Kind::kRead, f.slice.length};
  auto kind = checkAnswerHeader(h, pending ? &oldest : nullptr);
  if (!kind.isOk()) return proto(kind.status().message());
  Status result;
  if (*kind == AnswerKind::kReadData) {
    TIDE_RETURN_IF_ERROR(conn_.recvExact(f.slice.local, h.length, IoWait{timeout, nullptr}));
  } else if (*kind == AnswerKind::kNack) {
    std::string text(h.length, '\0');
    TIDE_RETURN_IF_ERROR(conn_.recvExact(text.data(), text.size(), IoWait{timeout, nullptr}));
    result = Status(nackCode(h.code), "rejected by rank " + std::to_string(peer_) + ": " + text);
  }
  bool sent;
  {
    std::lock_guard lock(mu_);
    sent = inFlight_.front().sent;
    if (!sent) early_.emplace(f.seq, result);  // the sender resolves it
    inFlight_.pop_front();
  }
  if (sent) host_.sliceDone(f.slice, result);
  return true;
}

void OutStream::receiveLoop() {
  Status st;
  bool closed = false;
  while (st.isOk() && !closed) {
    auto more = receiveOne();
    if (!more.isOk())
      st = more.status();
    else
      closed = !*more;
  }
  if (closed)
    st = TIDE_ERROR(Code::kUnavailable, "rank " + std::to_string(peer_) + " closed the connection");
  kill(st);
  std::vector<Slice> sent;
  Status why;
  {
    std::lock_guard lock(mu_);
    receiverDone_ = true;
    why = deadStatus_;
    for (auto it = inFlight_.begin(); it != inFlight_.end();) {
      if (it->sent) {
        sent.push_back(std::move(it->slice));
        it = inFlight_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const Slice& s : sent) host_.sliceDone(s, why);
  if (why.code() == Code::kCancelled) return;
  // A close with nothing owed is the peer leaving, not yet a failure: its
  // last messages may still be on their way on other connections.
  if (closed && sent.empty())
    host_.connectionClosed(peer_);
  else
    host_.peerFailed(peer_, why);
}

}  // namespace tide::transport::tcp
