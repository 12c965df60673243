#pragma once
// RC queue-pair bring-up. Two ways to connect the same channels:
//  * over tide's rendezvous store: each rank publishes QPN, PSN, GID, LID and
//    MTU of its QPs for every peer, reads the peer's, and moves its QPs
//    INIT -> RTR -> RTS itself (connectViaStore);
//  * through RDMA CM (cm_connector.h), which exchanges the same facts in its
//    own connection protocol.
// Both produce the same Channel table: for every peer, rails x streams
// channels; for this rank itself, loopback pairs (a sender QP connected to a
// responder QP on the same device).

#include <infiniband/verbs.h>

#include <functional>
#include <memory>
#include <vector>

#include "engine/core/kv_store.h"
#include "engine/core/status.h"
#include "engine/transport/rdma/channel.h"
#include "engine/transport/rdma/device.h"

namespace tide::transport::rdma {

struct QpParams {
  uint32_t sqDepth = 128;
  uint32_t rqDepth = 64;
  uint32_t maxInline = 64;
  uint8_t timeout = 17;   // 4.096 us * 2^17 = 0.54 s per try
  uint8_t retryCnt = 6;   // about 4 s before a dead peer is reported
  uint8_t rnrRetry = 7;   // wait for the receiver's posted receives forever
  uint8_t rdAtomic = 16;  // outstanding RDMA READs per QP
};

struct ConnectPlan {
  int rank = 0;
  int worldSize = 1;
  int streams = 1;
  std::vector<Device*> devices;  // one rail per device
  QpParams params;
  double timeoutSeconds = 30;
  std::string keyPrefix = "rdma/";
  // Creates a QP (RESET state) on rail `rail`'s device with the CQs of that rail.
  std::function<Result<QueuePair>(int rail)> makeQp;
};

// Index of the channel for (peer, rail, stream) in the table both paths build.
inline size_t channelIndex(const ConnectPlan& plan, int peer, int rail, int stream) {
  size_t rails = plan.devices.size();
  return (static_cast<size_t>(peer) * rails + static_cast<size_t>(rail)) *
             static_cast<size_t>(plan.streams) +
         static_cast<size_t>(stream);
}

// The facts a peer needs to connect to one QP.
struct QpEndpoint {
  uint32_t qpn = 0;
  uint32_t psn = 0;
  ibv_gid gid{};
  uint16_t lid = 0;
  uint8_t mtu = IBV_MTU_1024;
};

Status moveToInit(ibv_qp* qp, const Device& dev);
Status moveToRtr(ibv_qp* qp, const Device& dev, const QpEndpoint& remote, const QpParams& params);
Status moveToRts(ibv_qp* qp, uint32_t psn, const QpParams& params);

// Creates the sender channels for every peer (this rank included), QPs in
// INIT, in channelIndex order.
Result<std::vector<Channel>> createChannels(const ConnectPlan& plan);

// Builds the channel table (rank x rails x streams senders, then the
// loopback responders) with the store path. Ends with a store barrier so no
// rank writes before its peers' QPs are ready to receive.
Result<std::vector<Channel>> connectViaStore(const ConnectPlan& plan, Store& store);

// The loopback pairs for this rank itself (shared by both paths).
Status connectSelf(const ConnectPlan& plan, std::vector<Channel>& channels);

// A fresh 24-bit packet sequence number.
uint32_t randomPsn();

}  // namespace tide::transport::rdma
