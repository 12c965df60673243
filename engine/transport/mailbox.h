#pragma once
// Mailbox: the receiving side of Transport::send()/recv() for backends that
// carry control messages themselves (tcp, shm, the test fake). Messages are
// queued per (peer, tag) in arrival order; take() waits for the next one,
// until the deadline or until the peer is closed (then it fails with the
// reason the close gave, once the peer's queued messages are taken).
// Thread-safe: receivers' threads put(), the transport's user take()s.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "engine/core/status.h"

namespace tide::transport {

class Mailbox {
 public:
  explicit Mailbox(int worldSize) : closed_(worldSize) {}
  Mailbox(const Mailbox&) = delete;
  Mailbox& operator=(const Mailbox&) = delete;

  void put(int peer, uint32_t tag, std::vector<uint8_t> bytes);
  // `why` (an error) ends every wait on `peer`; the first reason given stays.
  void close(int peer, const Status& why);
  void closeAll(const Status& why);
  bool closed(int peer) const;
  // The next message from `peer` with `tag`: kTimeout after timeoutSeconds,
  // the close's reason once the peer is closed and nothing is queued.
  Result<std::vector<uint8_t>> take(int peer, uint32_t tag, double timeoutSeconds);

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::pair<int, uint32_t>, std::deque<std::vector<uint8_t>>> queues_;
  std::vector<Status> closed_;  // per peer: ok while open
};

}  // namespace tide::transport
