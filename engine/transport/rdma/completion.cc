#include "engine/transport/rdma/completion.h"

#include <fcntl.h>
#include <poll.h>

#include <vector>

#include "engine/core/errno_status.h"

namespace tide::transport::rdma {

Result<PollMode> parsePollMode(const std::string& text) {
  if (text.empty() || text == "busy") return PollMode::kBusy;
  if (text == "event") return PollMode::kEvent;
  return TIDE_ERROR(Code::kInvalidArgument,
                    "rdma option poll='" + text + "' (expected busy or event)");
}

const char* pollModeName(PollMode mode) {
  return mode == PollMode::kBusy ? "busy" : "event";
}

Status makeNonBlocking(ibv_comp_channel* channel) {
  int flags = fcntl(channel->fd, F_GETFL);
  if (flags < 0 || fcntl(channel->fd, F_SETFL, flags | O_NONBLOCK) < 0)
    return TIDE_ERRNO("fcntl(completion channel, O_NONBLOCK)");
  return Status::ok();
}

Status armCq(ibv_cq* cq) {
  int rc = ibv_req_notify_cq(cq, 0);
  if (rc != 0) {
    errno = rc;
    return TIDE_ERRNO("ibv_req_notify_cq");
  }
  return Status::ok();
}

Result<bool> waitForEvents(std::span<ibv_comp_channel* const> channels, double timeoutSeconds) {
  std::vector<pollfd> fds;
  for (auto* ch : channels) fds.push_back(pollfd{ch->fd, POLLIN, 0});
  int ms = timeoutSeconds <= 0 ? 0 : static_cast<int>(timeoutSeconds * 1000) + 1;
  int n = ::poll(fds.data(), fds.size(), ms);
  if (n < 0) {
    if (errno == EINTR) return false;
    return TIDE_ERRNO("poll(completion channels)");
  }
  bool any = false;
  for (size_t i = 0; i < fds.size(); ++i) {
    if ((fds[i].revents & POLLIN) == 0) continue;
    ibv_cq* cq = nullptr;
    void* ctx = nullptr;
    // Drain: every event must be acknowledged or destroying the CQ blocks.
    while (ibv_get_cq_event(channels[i], &cq, &ctx) == 0) {
      ibv_ack_cq_events(cq, 1);
      any = true;
    }
  }
  return any;
}

}  // namespace tide::transport::rdma
