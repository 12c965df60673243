#include "engine/transport/tcp/tcp_in_stream.h"

#include <string>

#include "engine/core/log.h"

namespace tide::transport::tcp {

InStream::InStream(UniqueFd fd, int peer, StreamHost& host)
    : conn_(std::move(fd), peer, &host.stopping()), peer_(peer), host_(host) {}

InStream::~InStream() {
  kill();
  join();
}

void InStream::join() {
  if (thread_.joinable()) thread_.join();
}

void InStream::start() {
  thread_ = std::thread([this] { serveLoop(); });
}

void InStream::kill() {
  conn_.shutdown();
}

Status InStream::answer(const WireHeader& request, MsgType type, const Status& status) {
  WireHeader h;
  h.type = static_cast<uint8_t>(type);
  h.seq = request.seq;
  h.region = request.region;
  h.offset = request.offset;
  std::string text;
  if (!status.isOk()) {
    h.type = static_cast<uint8_t>(MsgType::kNack);
    h.code = static_cast<uint8_t>(status.code());
    text = status.message();
    h.length = text.size();
  }
  iovec iov[2] = {{&h, sizeof h}, {text.data(), text.size()}};
  return conn_.sendAll(iov, 2, IoWait{host_.opTimeoutSeconds(), nullptr});
}

Status InStream::serveOne(const WireHeader& h) {
  const double timeout = host_.opTimeoutSeconds();
  auto proto = [&](const std::string& what) {
    return TIDE_ERROR(Code::kDataLoss,
                      "protocol error from rank " + std::to_string(peer_) + ": " + what);
  };
  if (Status s = checkRequestHeader(h); !s.isOk()) return proto(s.message());
  switch (static_cast<MsgType>(h.type)) {
    case MsgType::kWrite: {
      auto lease = host_.regions().acquire(h.region, h.offset, h.length, h.key);
      if (!lease.isOk()) {
        // Drain the payload so the connection stays usable; memory untouched.
        TIDE_RETURN_IF_ERROR(conn_.discard(h.length, IoWait{timeout, nullptr}));
        return answer(h, MsgType::kAck, lease.status());
      }
      TIDE_RETURN_IF_ERROR(conn_.recvExact(lease->data(), h.length, IoWait{timeout, nullptr}));
      lease = RegionLease();
      if (h.flags & kFlagImm) host_.notify(peer_, h.imm);
      return answer(h, MsgType::kAck, Status::ok());
    }
    case MsgType::kReadReq: {
      auto lease = host_.regions().acquire(h.region, h.offset, h.length, h.key);
      if (!lease.isOk()) return answer(h, MsgType::kReadResp, lease.status());
      WireHeader r;
      r.type = static_cast<uint8_t>(MsgType::kReadResp);
      r.seq = h.seq;
      r.region = h.region;
      r.offset = h.offset;
      r.length = h.length;
      iovec iov[2] = {{&r, sizeof r}, {lease->data(), h.length}};
      return conn_.sendAll(iov, 2, IoWait{timeout, nullptr});
    }
    case MsgType::kControl: {
      std::vector<uint8_t> bytes(h.length);
      TIDE_RETURN_IF_ERROR(conn_.recvExact(bytes.data(), bytes.size(), IoWait{timeout, nullptr}));
      host_.deliverControl(peer_, h.imm, std::move(bytes));
      return Status::ok();
    }
    default:
      return proto("unexpected message type " + std::to_string(h.type));  // checked above
  }
}

void InStream::serveLoop() {
  Status st;
  bool closed = false;
  while (st.isOk() && !closed) {
    WireHeader h;
    // Between requests a connection may stay quiet for as long as it likes.
    auto more = conn_.recvMessageStart(
        &h, sizeof h, IoWait{host_.opTimeoutSeconds(), [] { return Status::ok(); }});
    if (!more.isOk())
      st = more.status();
    else if (!*more)
      closed = true;
    else
      st = serveOne(h);
  }
  conn_.shutdown();
  if (st.code() == Code::kCancelled || host_.stopping().load()) return;
  // Every request the peer sent on this connection was served: the peer is
  // gone only once all its connections are (a message still being read on
  // another one must reach the mailbox first).
  if (closed) return host_.connectionClosed(peer_);
  TIDE_LOG_INFO("tcp: requests from rank {} stopped: {}", peer_, st.message());
  host_.peerFailed(peer_, st);
}

}  // namespace tide::transport::tcp
