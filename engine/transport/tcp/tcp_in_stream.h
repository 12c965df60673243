#pragma once
// The target's end of one connection: a progress thread that checks each
// request (region, bounds, key) against the registrations before touching
// memory, receives WRITE data straight into the region, sends READ data
// straight from it, and answers every request in order (ACK, data or NACK).

#include <thread>

#include "engine/transport/tcp/tcp_connection.h"
#include "engine/transport/tcp/tcp_stream_host.h"
#include "engine/transport/tcp/tcp_wire.h"

namespace tide::transport::tcp {

class InStream {
 public:
  InStream(UniqueFd fd, int peer, StreamHost& host);
  InStream(const InStream&) = delete;
  InStream& operator=(const InStream&) = delete;
  ~InStream();  // stops and joins

  void start();
  void kill();
  void join();

 private:
  void serveLoop();
  // Serves one request whose header has been read.
  Status serveOne(const WireHeader& h);
  Status answer(const WireHeader& request, MsgType type, const Status& status);

  Connection conn_;
  const int peer_;
  StreamHost& host_;
  std::thread thread_;
};

}  // namespace tide::transport::tcp
