#pragma once
// Low-level blocking I/O on descriptors, in one place for every layer:
// whole-buffer sends and receives that keep errno in their Status, and TCP
// listen/connect (IPv4) with a deadline.
//
// Errors: a peer that closed is kUnavailable ("closed by the peer"); a
// socket timeout (SO_RCVTIMEO/SO_SNDTIMEO, EAGAIN) is kTimeout; anything else
// is the errno's code with its text (errno_status.h).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/core/clock.h"
#include "engine/core/fd.h"
#include "engine/core/status.h"

namespace tide {

// Writes all n bytes. On a socket with send(MSG_NOSIGNAL), so a closed peer
// is an error and not SIGPIPE; on anything else (pipe, file) with write().
Status sendAll(int fd, const void* data, size_t n);
inline Status sendAll(int fd, std::string_view s) {
  return sendAll(fd, s.data(), s.size());
}
// Reads exactly n bytes; blocks as the descriptor does (setIoTimeout bounds it).
Status recvExact(int fd, void* data, size_t n);
// Reads exactly n bytes before the deadline, polling, whatever the socket's
// own timeouts (handshakes on sockets set up for short ticks).
Status recvExact(int fd, void* data, size_t n, const Deadline& deadline);

// Applies SO_RCVTIMEO/SO_SNDTIMEO; 0 disables the timeout.
void setIoTimeout(int fd, double seconds);

// Listens on host:port (a numeric IPv4 or a name resolving to one; port 0:
// any free port); returns the socket.
Result<UniqueFd> listenTcp(const std::string& host, int port, int backlog);
// The port a socket is bound to, or -1.
int boundPort(int fd);
// Connects to host:port, retrying while the peer is not there yet (refused,
// unreachable, timed out) until the deadline, which ends in kUnavailable
// ("unreachable"); other errors fail at once. The socket is blocking, with
// TCP_NODELAY. A non-empty `source` (numeric IPv4) is bound first: the
// connection leaves from that address.
Result<UniqueFd> connectTcp(const std::string& host, int port, const Deadline& deadline,
                            const std::string& source = {});
inline Result<UniqueFd> connectTcp(const std::string& host, int port, double timeoutSeconds) {
  return connectTcp(host, port, Deadline::after(timeoutSeconds));
}

}  // namespace tide
