#pragma once
// The initiator's end of one connection: a sender thread that writes queued
// requests (data straight from the local region) and a receiver thread that
// matches answers FIFO to requests in flight, landing READ data straight in
// the local region. A slice's memory is released (sliceDone) only by the
// thread that last touches it, so a failure never frees memory still in use.

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/transport/tcp/tcp_connection.h"
#include "engine/transport/tcp/tcp_stream_host.h"
#include "engine/transport/tcp/tcp_wire.h"

namespace tide::transport::tcp {

class OutStream {
 public:
  OutStream(UniqueFd fd, int peer, StreamHost& host);
  OutStream(const OutStream&) = delete;
  OutStream& operator=(const OutStream&) = delete;
  ~OutStream();  // stops and joins

  void start();
  // Queues slices; if the stream is dead they fail at once.
  void enqueue(std::vector<Slice> slices);
  // Fails the stream (peer gone, shutdown): wakes and stops both threads.
  void kill(const Status& why);
  void join();

 private:
  struct InFlight {
    Slice slice;
    uint64_t seq = 0;
    bool sent = false;  // the sender no longer reads the slice's memory
  };
  void sendLoop();
  void receiveLoop();
  // Matches one answer; false when the peer closed with nothing owed.
  Result<bool> receiveOne();
  Status idleCheck();
  Status deadStatus();
  void failSlices(std::vector<Slice>& slices);

  Connection conn_;
  const int peer_;
  StreamHost& host_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Slice> queue_;
  std::deque<InFlight> inFlight_;
  // Answers that arrived before the sender finished the send call, by seq.
  std::map<uint64_t, Status> early_;
  uint64_t nextSeq_ = 1;
  double lastActivity_ = 0;  // sender side progress (guarded by mu_)
  bool dead_ = false;
  bool receiverDone_ = false;
  Status deadStatus_;
  std::thread sender_, receiver_;
};

}  // namespace tide::transport::tcp
