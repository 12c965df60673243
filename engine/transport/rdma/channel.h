#pragma once
// A Channel is one RC queue pair to one peer over one device ("rail"), with
// the bookkeeping of its bounded send queue: which slices are in flight, in
// posting order, so that one signalled completion retires every unsignalled
// work request before it (RC completes in order).

#include <infiniband/verbs.h>

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/transport/rdma/verbs.h"
#include "engine/transport/transport.h"

namespace tide::transport::rdma {

// One posted (or to be posted) piece of a request.
struct Slice {
  BatchId batch = 0;
  Op op = Op::kWrite;
  bool withImm = false;  // the tail slice of a kWriteWithImm request
  uint32_t imm = 0;
  uint32_t localRegion = 0;
  uint64_t localAddr = 0;
  uint64_t remoteAddr = 0;
  uint64_t length = 0;
  int32_t peer = -1;
  uint32_t remoteRegion = 0;
  int attempts = 0;  // times it was posted (a failed slice moves to another channel)
};

struct InFlight {
  uint64_t seq = 0;
  bool signalled = false;
  Slice slice;
};

struct Channel {
  QueuePair qp;
  int32_t peer = -1;
  int rail = 0;        // index into the transport's devices
  bool sender = true;  // false: the responder half of a loopback pair
  bool broken = false;
  std::string brokenReason;
  uint32_t sqDepth = 0;
  uint32_t signalEvery = 1;
  uint32_t unsignalled = 0;
  uint64_t nextSeq = 1;
  std::deque<InFlight> inFlight;

  uint32_t room() const { return broken ? 0 : sqDepth - static_cast<uint32_t>(inFlight.size()); }
};

// Posts `slices` as one chained ibv_post_send on `ch` (the caller made sure
// they fit). lkey/rkey are the keys of the slices' regions on ch's device.
// Every signalEvery-th and the last work request are signalled.
struct PostItem {
  Slice slice;
  uint32_t lkey = 0;
  uint32_t rkey = 0;
};
Status postChain(Channel& ch, std::vector<PostItem>& items, uint32_t maxInline);

// Posts `count` zero-length receive work requests (WRITE_WITH_IMM consumes
// one each); wr_id carries `channelIndex`.
Status postReceives(Channel& ch, uint64_t channelIndex, uint32_t count);

// Moves the QP to the error state so that nothing on it executes any more.
void breakChannel(Channel& ch, const std::string& reason);

// Code for a failed work completion; retryable ones may move to another QP.
Code codeForWc(ibv_wc_status status);
bool isRetryable(ibv_wc_status status);

}  // namespace tide::transport::rdma
