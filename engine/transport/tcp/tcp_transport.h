#pragma once
// tcp backend: one-sided WRITE/READ emulated over TCP sockets by a
// receiver-side progress thread per connection. Listens on
// config.listenAddress; config.streams connections per ordered rank pair.
// Options (config.options): "slice_bytes" (default 4MiB) cuts large requests
// into slices striped over the streams; "socket_buffer_bytes" (default 0:
// kernel autotuning) fixes SO_SNDBUF/SO_RCVBUF. This transport may be used
// from several threads at once.

#include <memory>

#include "engine/transport/registry.h"

namespace tide::transport::tcp {

Result<std::unique_ptr<Transport>> createTcpTransport(const TransportConfig& config);

}  // namespace tide::transport::tcp
