#pragma once
// Completion handling: busy polling spins on ibv_poll_cq; event mode arms
// the CQs (ibv_req_notify_cq), polls once more to close the race, then
// sleeps on the completion channels' file descriptors.

#include <infiniband/verbs.h>

#include <span>
#include <string>

#include "engine/core/status.h"

namespace tide::transport::rdma {

enum class PollMode { kBusy, kEvent };

Result<PollMode> parsePollMode(const std::string& text);
const char* pollModeName(PollMode mode);

// Makes the channel's fd non-blocking so draining events never blocks.
Status makeNonBlocking(ibv_comp_channel* channel);

// Requests an event for the next completion on `cq`.
Status armCq(ibv_cq* cq);

// Waits up to timeoutSeconds for an event on any channel, consumes and
// acknowledges every pending event. true when at least one arrived.
Result<bool> waitForEvents(std::span<ibv_comp_channel* const> channels, double timeoutSeconds);

}  // namespace tide::transport::rdma
