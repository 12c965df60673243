#pragma once
// Connects a tcp transport to every peer through the rendezvous store.
//
// Each rank listens on config.listenAddress (ephemeral port) and publishes
// "host:port" under tcp/addr/<rank>; rank 0 publishes a random per-run token
// under tcp/token. Every rank then opens config.streams connections to every
// peer, which carry its own requests (it is their initiator), and accepts the
// same number from every peer. A connection opens with a Hello (token, rank,
// stream); the acceptor drops any connection whose Hello does not match, so
// a stray or stale client never becomes a peer.

#include <vector>

#include "engine/core/fd.h"
#include "engine/transport/registry.h"

namespace tide::transport::tcp {

struct PeerSockets {
  // [peer][stream]; empty for this rank.
  std::vector<std::vector<UniqueFd>> outgoing;  // this rank's requests
  std::vector<std::vector<UniqueFd>> incoming;  // the peer's requests
};

Result<PeerSockets> rendezvous(const TransportConfig& config, uint64_t socketBufferBytes);

}  // namespace tide::transport::tcp
