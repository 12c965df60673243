#include "engine/transport/mailbox.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "engine/core/clock.h"

namespace tide::transport {

void Mailbox::put(int peer, uint32_t tag, std::vector<uint8_t> bytes) {
  {
    std::lock_guard lock(mu_);
    queues_[{peer, tag}].push_back(std::move(bytes));
  }
  cv_.notify_all();
}

void Mailbox::close(int peer, const Status& why) {
  {
    std::lock_guard lock(mu_);
    if (closed_[peer].isOk()) closed_[peer] = why;
  }
  cv_.notify_all();
}

void Mailbox::closeAll(const Status& why) {
  {
    std::lock_guard lock(mu_);
    for (auto& c : closed_) {
      if (c.isOk()) c = why;
    }
  }
  cv_.notify_all();
}

bool Mailbox::closed(int peer) const {
  std::lock_guard lock(mu_);
  return !closed_[peer].isOk();
}

Result<std::vector<uint8_t>> Mailbox::take(int peer, uint32_t tag, double timeoutSeconds) {
  const Deadline deadline = Deadline::after(std::max(0.0, timeoutSeconds));
  std::unique_lock lock(mu_);
  auto& box = queues_[{peer, tag}];
  cv_.wait_until(lock, deadline.when(), [&] { return !box.empty() || !closed_[peer].isOk(); });
  if (box.empty()) {
    if (!closed_[peer].isOk()) return closed_[peer];
    return TIDE_ERROR(Code::kTimeout, "no message from rank " + std::to_string(peer) + " (tag " +
                                          std::to_string(tag) + ") within " +
                                          std::to_string(timeoutSeconds) + " s");
  }
  std::vector<uint8_t> out = std::move(box.front());
  box.pop_front();
  return out;
}

}  // namespace tide::transport
