#pragma once
// Small blocking-socket helpers shared by the rendezvous store's client and
// server: whole-buffer reads/writes, timeouts, TCP connect with a deadline.

#include <cstdint>
#include <string>

#include "engine/core/fd.h"
#include "engine/core/status.h"

namespace tide::exec {

bool sendAll(int fd, const void* data, size_t n);
bool recvAll(int fd, void* data, size_t n);
// Applies SO_RCVTIMEO/SO_SNDTIMEO; 0 disables the timeout.
void setIoTimeout(int fd, double seconds);

// Connects to host:port (IPv4), retrying refused/unreachable attempts until
// the deadline: the peer may not be listening yet.
Result<UniqueFd> connectTcp(const std::string& host, int port, double timeoutSeconds);
// Listens on host:port (port 0: any free port); returns the socket.
Result<UniqueFd> listenTcp(const std::string& host, int port, int backlog);
int boundPort(int fd);

}  // namespace tide::exec
