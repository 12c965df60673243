#include "engine/transport/tcp/tcp_connection.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "engine/core/errno_status.h"
#include "engine/core/sanitizers.h"
#include "engine/core/socket_io.h"
#include "engine/transport/tcp/tcp_wire.h"
#if TIDE_TSAN
extern "C" void __tsan_read_range(void* addr, unsigned long size);
extern "C" void AnnotateIgnoreReadsBegin(const char* file, int line);
extern "C" void AnnotateIgnoreReadsEnd(const char* file, int line);
#elif TIDE_ASAN
#include <sys/syscall.h>
#include <unistd.h>
extern "C" void __asan_loadN(uintptr_t addr, uintptr_t size);
#endif

namespace tide::transport::tcp {
namespace {

// ThreadSanitizer orders a send before the receive that gets its bytes, but its
// sendmsg interceptor records the read of the buffer after that release (a
// known ordering gap), so a sender that reuses its buffer once the peer has
// answered looks racy with its own send. The reads are recorded here, before
// the send, and the interceptor's late copy of them is not. AddressSanitizer's
// interceptor likewise checks the buffer after the send returns, when the peer
// may already have the bytes and the buffer's owner may have freed it (a false
// use-after-free): the buffer is checked before the send, which bypasses it.
ssize_t sendmsgForSanitizers(int fd, const msghdr* msg, int flags) {
#if TIDE_TSAN
  for (size_t i = 0; i < msg->msg_iovlen; ++i)
    __tsan_read_range(msg->msg_iov[i].iov_base, msg->msg_iov[i].iov_len);
  AnnotateIgnoreReadsBegin(__FILE__, __LINE__);
  ssize_t n = ::sendmsg(fd, msg, flags);
  int err = errno;
  AnnotateIgnoreReadsEnd(__FILE__, __LINE__);
  errno = err;
  return n;
#elif TIDE_ASAN
  for (size_t i = 0; i < msg->msg_iovlen; ++i)
    __asan_loadN(reinterpret_cast<uintptr_t>(msg->msg_iov[i].iov_base), msg->msg_iov[i].iov_len);
  return ::syscall(SYS_sendmsg, fd, msg, flags);
#else
  return ::sendmsg(fd, msg, flags);
#endif
}

bool transientErrno(int err) {
  return err == EAGAIN || err == EWOULDBLOCK || err == EINTR;
}

}  // namespace

Status Connection::closedError(const char* what) const {
  return TIDE_ERROR(Code::kUnavailable, std::string(what) + ": connection to rank " +
                                            std::to_string(peer_) + " closed");
}

Status Connection::checkWait(const IoWait& wait, bool started, double since) const {
  if (stop_ != nullptr && stop_->load(std::memory_order_relaxed))
    return TIDE_ERROR(Code::kCancelled, "transport is shutting down");
  if (!started && wait.idle) return wait.idle();
  if (nowSeconds() - since > wait.stallSeconds)
    return TIDE_ERROR(Code::kTimeout, "rank " + std::to_string(peer_) + " made no progress for " +
                                          std::to_string(wait.stallSeconds) + " s");
  return Status::ok();
}

Status Connection::sendAll(iovec* iov, int count, const IoWait& wait) {
  double since = nowSeconds();
  bool started = false;
  while (count > 0) {
    if (iov->iov_len == 0) {
      ++iov;
      --count;
      continue;
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(count);
    ssize_t n = sendmsgForSanitizers(fd_.get(), &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (!transientErrno(errno))
        return errno == EPIPE || errno == ECONNRESET
                   ? closedError("send")
                   : TIDE_ERRNO("send to rank " + std::to_string(peer_));
      TIDE_RETURN_IF_ERROR(checkWait(wait, true, since));
      continue;
    }
    started = true;
    since = nowSeconds();
    size_t left = static_cast<size_t>(n);
    while (left > 0 && count > 0) {
      size_t take = std::min(left, iov->iov_len);
      iov->iov_base = static_cast<char*>(iov->iov_base) + take;
      iov->iov_len -= take;
      left -= take;
      if (iov->iov_len == 0) {
        ++iov;
        --count;
      }
    }
  }
  (void)started;
  return Status::ok();
}

Status Connection::sendAll(const void* data, size_t len, const IoWait& wait) {
  iovec iov{const_cast<void*>(data), len};
  return sendAll(&iov, 1, wait);
}

Status Connection::recvExact(void* buf, size_t len, const IoWait& wait) {
  return receive(buf, len, wait, nullptr);
}

Result<bool> Connection::recvMessageStart(void* buf, size_t len, const IoWait& wait) {
  bool closedFirst = false;
  Status s = receive(buf, len, wait, &closedFirst);
  if (closedFirst) return false;
  TIDE_RETURN_IF_ERROR(s);
  return true;
}

Status Connection::receive(void* buf, size_t len, const IoWait& wait, bool* closedFirst) {
  char* p = static_cast<char*>(buf);
  double since = nowSeconds();
  bool started = false;
  while (len > 0) {
    ssize_t n = ::recv(fd_.get(), p, len, MSG_WAITALL);
    if (n == 0) {
      if (!started && closedFirst != nullptr) *closedFirst = true;
      return closedError("receive");
    }
    if (n < 0) {
      if (!transientErrno(errno))
        return errno == ECONNRESET ? closedError("receive")
                                   : TIDE_ERRNO("receive from rank " + std::to_string(peer_));
      TIDE_RETURN_IF_ERROR(checkWait(wait, started, since));
      continue;
    }
    started = true;
    since = nowSeconds();
    lastReceive_.store(since, std::memory_order_relaxed);
    p += n;
    len -= static_cast<size_t>(n);
  }
  return Status::ok();
}

Status Connection::discard(uint64_t len, const IoWait& wait) {
  std::vector<char> sink(std::min<uint64_t>(len, 1 << 20));
  while (len > 0) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(len, sink.size()));
    TIDE_RETURN_IF_ERROR(recvExact(sink.data(), n, wait));
    len -= n;
  }
  return Status::ok();
}

void Connection::shutdown() {
  if (fd_.valid()) ::shutdown(fd_.get(), SHUT_RDWR);
}

Status configureSocket(int fd, uint64_t bufferBytes) {
  int one = 1;
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
    return TIDE_ERRNO("setsockopt(TCP_NODELAY)");
  timeval tv{0, static_cast<suseconds_t>(kTickSeconds * 1e6)};
  if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
      setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0)
    return TIDE_ERRNO("setsockopt(SO_RCVTIMEO/SO_SNDTIMEO)");
  if (bufferBytes > 0) {
    // Fixing the size turns off the kernel's autotuning; only on request.
    int b = static_cast<int>(std::min<uint64_t>(bufferBytes, 1u << 30));
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &b, sizeof b) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &b, sizeof b) != 0)
      return TIDE_ERRNO("setsockopt(SO_SNDBUF/SO_RCVBUF)");
  }
  return Status::ok();
}

Result<UniqueFd> listenOn(const std::string& host, int backlog, uint16_t& port) {
  TIDE_ASSIGN_OR_RETURN(UniqueFd fd, listenTcp(host, 0, backlog));
  const int bound = boundPort(fd.get());
  if (bound < 0) return TIDE_ERRNO("getsockname");
  port = static_cast<uint16_t>(bound);
  return fd;
}

Result<UniqueFd> connectTo(const std::string& hostPort, const Deadline& deadline,
                           const std::string& source) {
  TIDE_ASSIGN_OR_RETURN(HostPort where, splitHostPort(hostPort));
  auto fd = connectTcp(where.host, where.port, deadline, source);
  // The transport's contract: a peer that never listened is a timeout.
  if (!fd.isOk() && fd.status().code() == Code::kUnavailable && deadline.expired())
    return TIDE_ERROR(Code::kTimeout, "connect to " + hostPort + ": " + fd.status().message());
  return fd;
}

Status readWithDeadline(int fd, void* buf, size_t len, const Deadline& deadline) {
  Status s = recvExact(fd, buf, len, deadline);
  if (s.isOk()) return s;
  if (s.code() == Code::kTimeout) return TIDE_ERROR(Code::kTimeout, "handshake timed out");
  if (s.code() == Code::kUnavailable)
    return TIDE_ERROR(Code::kUnavailable, "connection closed during handshake");
  return s.withContext("handshake receive");
}

}  // namespace tide::transport::tcp
