#include "engine/transport/tcp/tcp_rendezvous.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "engine/core/errno_status.h"
#include "engine/core/log.h"
#include "engine/transport/region_table.h"
#include "engine/transport/tcp/tcp_connection.h"
#include "engine/transport/tcp/tcp_wire.h"

namespace tide::transport::tcp {
namespace {

constexpr double kHelloSeconds = 2.0;  // a silent stray connection costs at most this

Result<uint64_t> runToken(const TransportConfig& c) {
  if (c.rank == 0) {
    const uint64_t token = randomKey();
    TIDE_RETURN_IF_ERROR(c.store->set("tcp/token", formatRunToken(token)));
    return token;
  }
  TIDE_ASSIGN_OR_RETURN(std::string s, c.store->get("tcp/token", c.connectTimeoutSeconds));
  return parseRunToken(s);
}

// Accepts and checks the peers' connections until all arrived or the deadline.
class Acceptor {
 public:
  Acceptor(const TransportConfig& c, uint64_t token, int listenFd, uint64_t bufBytes,
           PeerSockets& out)
      : c_(c), token_(token), listenFd_(listenFd), bufBytes_(bufBytes), out_(out) {}

  Status run(const Deadline& deadline) {
    size_t expected = static_cast<size_t>(c_.worldSize - 1) * static_cast<size_t>(c_.streams);
    while (accepted_ < expected) {
      if (deadline.expired() || abort_.load())
        return TIDE_ERROR(Code::kTimeout, "rank " + std::to_string(c_.rank) + " accepted " +
                                              std::to_string(accepted_) + " of " +
                                              std::to_string(expected) +
                                              " peer connections before the connect timeout");
      pollfd pfd{listenFd_, POLLIN, 0};
      int rc = ::poll(&pfd, 1, 100);
      if (rc < 0 && errno != EINTR) return TIDE_ERRNO("poll on listener");
      if (rc <= 0) continue;
      UniqueFd fd(::accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC));
      if (!fd.valid()) continue;
      Status s = admit(std::move(fd), deadline);
      if (!s.isOk()) TIDE_LOG_WARN("tcp rank {}: rejected a connection: {}", c_.rank, s.message());
    }
    return Status::ok();
  }
  std::atomic<bool> abort_{false};

 private:
  Status admit(UniqueFd fd, const Deadline& deadline) {
    Hello h;
    Deadline helloBy(std::min(deadline.remaining(), Deadline::after(kHelloSeconds).remaining()));
    TIDE_RETURN_IF_ERROR(readWithDeadline(fd.get(), &h, sizeof h, helloBy));
    TIDE_RETURN_IF_ERROR(checkHello(h, token_, c_.rank, c_.worldSize, c_.streams));
    auto& slot = out_.incoming[h.rank][h.stream];
    if (slot.valid())
      return TIDE_ERROR(Code::kAlreadyExists, "duplicate connection from rank " +
                                                  std::to_string(h.rank) + " stream " +
                                                  std::to_string(h.stream));
    TIDE_RETURN_IF_ERROR(configureSocket(fd.get(), bufBytes_));
    HelloReply r;
    r.rank = c_.rank;
    r.token = token_;
    if (::send(fd.get(), &r, sizeof r, MSG_NOSIGNAL) != sizeof r) return TIDE_ERRNO("hello reply");
    slot = std::move(fd);
    ++accepted_;
    return Status::ok();
  }

  const TransportConfig& c_;
  const uint64_t token_;
  const int listenFd_;
  const uint64_t bufBytes_;
  PeerSockets& out_;
  size_t accepted_ = 0;
};

Result<UniqueFd> connectStream(const TransportConfig& c, uint64_t token, const std::string& addr,
                               int peer, int stream, uint64_t bufBytes, const Deadline& deadline) {
  TIDE_ASSIGN_OR_RETURN(UniqueFd fd, connectTo(addr, deadline, c.sourceAddress));
  Hello h;
  h.token = token;
  h.rank = c.rank;
  h.stream = stream;
  h.worldSize = c.worldSize;
  h.target = peer;
  if (::send(fd.get(), &h, sizeof h, MSG_NOSIGNAL) != sizeof h)
    return TIDE_ERRNO("hello to rank " + std::to_string(peer));
  HelloReply r;
  Status s = readWithDeadline(fd.get(), &r, sizeof r, deadline);
  if (!s.isOk())
    return s.withContext("rank " + std::to_string(peer) + " at " + addr +
                         " did not accept the connection");
  if (Status id = checkHelloReply(r, token, peer); !id.isOk())
    return TIDE_ERROR(id.code(),
                      "rank " + std::to_string(peer) + " at " + addr + " " + id.message());
  TIDE_RETURN_IF_ERROR(configureSocket(fd.get(), bufBytes));
  return fd;
}

}  // namespace

Result<PeerSockets> rendezvous(const TransportConfig& c, uint64_t bufBytes) {
  if (c.streams < 1 || c.streams > 64)
    return TIDE_ERROR(Code::kInvalidArgument,
                      "tcp streams must be in [1, 64], got " + std::to_string(c.streams));
  Deadline deadline = Deadline::after(c.connectTimeoutSeconds);
  PeerSockets out;
  out.outgoing.resize(c.worldSize);
  out.incoming.resize(c.worldSize);
  for (int p = 0; p < c.worldSize; ++p) {
    if (p == c.rank) continue;
    out.outgoing[p].resize(c.streams);
    out.incoming[p].resize(c.streams);
  }
  if (c.worldSize == 1) return out;

  TIDE_ASSIGN_OR_RETURN(uint64_t token, runToken(c));
  uint16_t port = 0;
  TIDE_ASSIGN_OR_RETURN(UniqueFd listener,
                        listenOn(c.listenAddress, std::max(64, c.worldSize * c.streams), port));
  TIDE_RETURN_IF_ERROR(c.store->set("tcp/addr/" + std::to_string(c.rank),
                                    c.listenAddress + ":" + std::to_string(port)));

  Acceptor acceptor(c, token, listener.get(), bufBytes, out);
  Status acceptStatus;
  std::thread acceptThread([&] { acceptStatus = acceptor.run(deadline); });

  Status connectStatus;
  // Start with the next rank so that ranks do not all dial rank 0 first.
  for (int i = 1; i < c.worldSize && connectStatus.isOk(); ++i) {
    int peer = (c.rank + i) % c.worldSize;
    double left = std::chrono::duration<double>(deadline.remaining()).count();
    auto addr = c.store->get("tcp/addr/" + std::to_string(peer), left);
    if (!addr.isOk()) {
      connectStatus = addr.status().withContext("address of rank " + std::to_string(peer));
      break;
    }
    for (int s = 0; s < c.streams; ++s) {
      auto fd = connectStream(c, token, *addr, peer, s, bufBytes, deadline);
      if (!fd.isOk()) {
        connectStatus = fd.status();
        break;
      }
      out.outgoing[peer][s] = std::move(fd).value();
    }
  }
  if (!connectStatus.isOk()) acceptor.abort_ = true;
  acceptThread.join();
  TIDE_RETURN_IF_ERROR(connectStatus.withContext("tcp rank " + std::to_string(c.rank)));
  TIDE_RETURN_IF_ERROR(acceptStatus.withContext("tcp rank " + std::to_string(c.rank)));
  return out;
}

}  // namespace tide::transport::tcp
