#pragma once
// One TCP socket and bounded, interruptible I/O on it: every blocking call
// wakes at least every kTickSeconds to check the stop flag and how long the
// peer has been silent, so a dead or hung peer costs a bounded time, never a
// hang. shutdown() from another thread wakes blocked calls at once.

#include <sys/uio.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "engine/core/clock.h"
#include "engine/core/fd.h"
#include "engine/core/status.h"

namespace tide::transport::tcp {

inline constexpr double kTickSeconds = 0.1;

// How a blocking call waits.
struct IoWait {
  // Fail with kTimeout after this long without a byte moving (once started).
  double stallSeconds = 30;
  // Before the first byte, wait for as long as `idle` returns OK (checked
  // every tick); without it the stall timeout applies from the start.
  std::function<Status()> idle;
};

class Connection {
 public:
  Connection(UniqueFd fd, int peer, const std::atomic<bool>* stop)
      : fd_(std::move(fd)), peer_(peer), stop_(stop) {}
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Sends every byte of the iovecs (modified in place).
  Status sendAll(iovec* iov, int count, const IoWait& wait);
  Status sendAll(const void* data, size_t len, const IoWait& wait);
  // Receives exactly len bytes into buf (the final destination).
  Status recvExact(void* buf, size_t len, const IoWait& wait);
  // recvExact for the first bytes of a message: false when the peer closed
  // the connection before sending any of them (an orderly close between
  // messages, not a failure); a close part-way through is an error.
  Result<bool> recvMessageStart(void* buf, size_t len, const IoWait& wait);
  // Receives and drops len bytes (payload of a rejected request).
  Status discard(uint64_t len, const IoWait& wait);

  // Wakes every blocked call on this socket; further calls fail.
  void shutdown();
  int fd() const { return fd_.get(); }
  int peer() const { return peer_; }
  // Monotonic seconds of the last byte received.
  double lastReceive() const { return lastReceive_.load(std::memory_order_relaxed); }

 private:
  Status checkWait(const IoWait& wait, bool started, double since) const;
  Status closedError(const char* what) const;
  // recvExact; *closedFirst (when given) tells an orderly close before byte one.
  Status receive(void* buf, size_t len, const IoWait& wait, bool* closedFirst);

  UniqueFd fd_;
  const int peer_;
  const std::atomic<bool>* stop_;
  std::atomic<double> lastReceive_{nowSeconds()};
};

// Socket set-up shared by both ends: TCP_NODELAY, wake-up ticks, buffers.
Status configureSocket(int fd, uint64_t bufferBytes);
// Listens on host (numeric IPv4 or a name resolving to one), ephemeral port.
Result<UniqueFd> listenOn(const std::string& host, int backlog, uint16_t& port);
// Connects to "host:port" (from `source` when given), retrying refused
// connections until the deadline.
Result<UniqueFd> connectTo(const std::string& hostPort, const Deadline& deadline,
                           const std::string& source = {});
// Blocking read of exactly len bytes before the deadline (handshakes).
Status readWithDeadline(int fd, void* buf, size_t len, const Deadline& deadline);

}  // namespace tide::transport::tcp
