#include "engine/core/socket_io.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "engine/core/errno_status.h"

namespace tide {
namespace {

Result<sockaddr_in> resolve(const std::string& host, int port) {
  if (port < 0 || port > 65535)
    return TIDE_ERROR(Code::kInvalidArgument, "port " + std::to_string(port) + " out of range");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, host.c_str(), &a.sin_addr) == 1) return a;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || res == nullptr)
    return TIDE_ERROR(Code::kInvalidArgument,
                      "cannot resolve host '" + host + "': " + ::gai_strerror(rc));
  a.sin_addr = reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr;
  ::freeaddrinfo(res);
  return a;
}

bool wouldBlock(int err) {
  return err == EAGAIN || err == EWOULDBLOCK;
}

// The status of a failed transfer call: n == 0 is an orderly close.
Status ioError(ssize_t n, const char* what) {
  if (n == 0) return TIDE_ERROR(Code::kUnavailable, std::string(what) + ": closed by the peer");
  if (wouldBlock(errno)) return TIDE_ERROR(Code::kTimeout, std::string(what) + ": timed out");
  return TIDE_ERRNO(what);
}

// The peer is not there yet (or not reachable yet): worth another attempt.
bool retryConnect(int err) {
  switch (err) {
    case ECONNREFUSED:
    case ECONNRESET:
    case ECONNABORTED:
    case ETIMEDOUT:
    case EHOSTUNREACH:
    case ENETUNREACH:
    case EINTR:
    case EAGAIN:
      return true;
    default:
      return false;
  }
}

}  // namespace

Status sendAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  bool socket = true;
  while (n > 0) {
    ssize_t w = socket ? ::send(fd, p, n, MSG_NOSIGNAL) : ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && socket && errno == ENOTSOCK) {
      socket = false;
      continue;
    }
    if (w <= 0) return ioError(w, "send");
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status::ok();
}

Status recvExact(int fd, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    ssize_t r = ::recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return ioError(r, "receive");
    p += r;
    n -= static_cast<size_t>(r);
  }
  return Status::ok();
}

Status recvExact(int fd, void* data, size_t n, const Deadline& deadline) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline.remaining()).count();
    if (ms <= 0) return TIDE_ERROR(Code::kTimeout, "receive: deadline passed");
    pollfd pfd{fd, POLLIN, 0};
    int rc = ::poll(&pfd, 1, static_cast<int>(std::min<int64_t>(ms, 1000)));
    if (rc < 0 && errno != EINTR) return TIDE_ERRNO("poll");
    if (rc <= 0) continue;
    ssize_t r = ::recv(fd, p, n, MSG_DONTWAIT);
    if (r < 0 && (errno == EINTR || wouldBlock(errno))) continue;
    if (r <= 0) return ioError(r, "receive");
    p += r;
    n -= static_cast<size_t>(r);
  }
  return Status::ok();
}

void setIoTimeout(int fd, double seconds) {
  timeval tv{};
  if (seconds > 0) {
    tv.tv_sec = static_cast<time_t>(seconds);
    tv.tv_usec = static_cast<suseconds_t>((seconds - static_cast<double>(tv.tv_sec)) * 1e6);
  }
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

Result<UniqueFd> listenTcp(const std::string& host, int port, int backlog) {
  TIDE_ASSIGN_OR_RETURN(sockaddr_in addr, resolve(host, port));
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return TIDE_ERRNO("socket");
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    return TIDE_ERRNO("bind to " + host + ":" + std::to_string(port));
  if (::listen(fd.get(), backlog) != 0) return TIDE_ERRNO("listen on " + host);
  return fd;
}

int boundPort(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return -1;
  return ntohs(a.sin_port);
}

Result<UniqueFd> connectTcp(const std::string& host, int port, const Deadline& deadline,
                            const std::string& source) {
  TIDE_ASSIGN_OR_RETURN(sockaddr_in addr, resolve(host, port));
  sockaddr_in from{};
  if (!source.empty()) {
    TIDE_ASSIGN_OR_RETURN(from, resolve(source, 0));
  }
  const std::string where = host + ":" + std::to_string(port);
  std::string last = "no attempt";
  do {
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd.valid()) return TIDE_ERRNO("socket");
    if (!source.empty() && ::bind(fd.get(), reinterpret_cast<sockaddr*>(&from), sizeof from) != 0)
      return TIDE_ERRNO("bind to " + source + " before connecting to " + where);
    int rc = ::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    if (rc != 0 && errno == EINPROGRESS) {
      // Bounded by the deadline, and by a second so a lost SYN is retried.
      pollfd p{fd.get(), POLLOUT, 0};
      double left = std::chrono::duration<double>(deadline.remaining()).count();
      int ms = static_cast<int>(std::min(1.0, std::max(left, 0.01)) * 1000);
      if (::poll(&p, 1, ms) == 1) {
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
        rc = err == 0 ? 0 : -1;
        errno = err;
      } else {
        rc = -1;
        errno = ETIMEDOUT;
      }
    }
    if (rc == 0) {
      int flags = ::fcntl(fd.get(), F_GETFL);
      ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
      int one = 1;
      ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      return fd;
    }
    if (!retryConnect(errno)) return TIDE_ERRNO("connect to " + where);
    last = std::strerror(errno);
    if (!deadline.expired()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } while (!deadline.expired());
  return TIDE_ERROR(Code::kUnavailable, where + " unreachable until the deadline (" + last + ")");
}

}  // namespace tide
