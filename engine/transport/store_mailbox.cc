#include "engine/transport/store_mailbox.h"

#include <algorithm>
#include <chrono>

#include "engine/core/clock.h"

namespace tide::transport {

StoreMailbox::StoreMailbox(Store& store, std::string prefix, int rank, int worldSize, GoneFn gone,
                           double sliceSeconds)
    : store_(store),
      prefix_(std::move(prefix)),
      rank_(rank),
      worldSize_(worldSize),
      gone_(std::move(gone)),
      slice_(sliceSeconds) {}

Status StoreMailbox::checkPeer(int peer, const char* op) const {
  if (peer >= 0 && peer < worldSize_) return Status::ok();
  return TIDE_ERROR(Code::kInvalidArgument, std::string(op) + " rank " + std::to_string(peer) +
                                                " outside world of " + std::to_string(worldSize_));
}

std::string StoreMailbox::key(int from, int to, uint32_t tag, uint64_t seq) const {
  return prefix_ + "ctl/" + std::to_string(from) + "/" + std::to_string(to) + "/" +
         std::to_string(tag) + "/" + std::to_string(seq);
}

Status StoreMailbox::send(int peer, uint32_t tag, std::span<const uint8_t> bytes) {
  TIDE_RETURN_IF_ERROR(checkPeer(peer, "send to"));
  uint64_t seq;
  {
    std::lock_guard<std::mutex> lock(mu_);
    seq = sendSeq_[{peer, tag}]++;
  }
  return store_.set(key(rank_, peer, tag, seq),
                    std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

Result<std::vector<uint8_t>> StoreMailbox::take(const std::string& k, std::string value,
                                                uint64_t& seq) {
  // Only this receiver reads the key: once read it is garbage.
  TIDE_RETURN_IF_ERROR(store_.erase(k).withContext("control message"));
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++seq;
  }
  return std::vector<uint8_t>(value.begin(), value.end());
}

Result<std::vector<uint8_t>> StoreMailbox::recv(int peer, uint32_t tag, double timeoutSeconds) {
  TIDE_RETURN_IF_ERROR(checkPeer(peer, "recv from"));
  uint64_t* seq;
  {
    std::lock_guard<std::mutex> lock(mu_);
    seq = &recvSeq_[{peer, tag}];  // std::map: the address stays valid
  }
  const std::string k = key(peer, rank_, tag, *seq);
  const std::string what =
      "control message from rank " + std::to_string(peer) + " tag " + std::to_string(tag);
  // In slices, so that a peer that left (it marks itself gone after its last
  // send) fails the wait at once instead of after the whole timeout.
  Deadline deadline = Deadline::after(std::max(0.0, timeoutSeconds));
  while (true) {
    const double left = std::chrono::duration<double>(deadline.remaining()).count();
    auto v = store_.get(k, std::min(std::max(0.0, left), slice_));
    if (v.isOk()) return take(k, std::move(*v), *seq);
    if (v.status().code() != Code::kTimeout) return v.status().withContext(what);
    auto gone = gone_ ? gone_(peer) : Result<bool>(false);
    if (gone.isOk() && *gone) {
      v = store_.get(k, 0);  // sent just before it left
      if (v.isOk()) return take(k, std::move(*v), *seq);
      return TIDE_ERROR(Code::kUnavailable,
                        what + ": rank " + std::to_string(peer) + " left without sending it");
    }
    if (deadline.expired()) return v.status().withContext(what);
  }
}

}  // namespace tide::transport
