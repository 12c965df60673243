#pragma once
// The shm backend's two-sided control channel and liveness signal: one
// abstract unix-domain socket per rank, one connection per ordered pair of
// ranks. A connection that reaches EOF means its peer closed its transport or
// its process died, which is how one-sided requests to it fail fast.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "engine/core/fd.h"
#include "engine/core/kv_store.h"
#include "engine/core/status.h"
#include "engine/transport/mailbox.h"

namespace tide::transport::shm {

// What a rank publishes in the store for its peers: the abstract socket's
// name and the nonce its hello must carry ("name\nnonce").
struct ControlAddress {
  std::string name;
  uint64_t nonce = 0;
};
std::string encodeControlAddress(const ControlAddress& a);
// kInvalidArgument when the record is not "name\nnonce" with a decimal nonce.
Result<ControlAddress> decodeControlAddress(std::string_view text);

class ControlChannel {
 public:
  ~ControlChannel();
  ControlChannel(const ControlChannel&) = delete;
  ControlChannel& operator=(const ControlChannel&) = delete;

  // Publishes this rank's socket in the store and connects to every peer.
  static Result<std::unique_ptr<ControlChannel>> create(int rank, int worldSize, Store& store,
                                                        double connectTimeoutSeconds,
                                                        double opTimeoutSeconds);

  Status send(int peer, uint32_t tag, std::span<const uint8_t> bytes);
  Result<std::vector<uint8_t>> recv(int peer, uint32_t tag, double timeoutSeconds);
  // True once the peer's connection to us reached EOF or failed.
  bool peerGone(int peer) const;

 private:
  ControlChannel(int rank, int worldSize, double opTimeoutSeconds);
  void receiveLoop();
  // Reads one framed message from an incoming connection; false on EOF/error.
  bool readMessage(int fd, int peer);
  void markGone(int peer, const std::string& why);

  int rank_;
  int worldSize_;
  double opTimeout_;
  uint64_t nonce_ = 0;  // peers prove they read it from the store
  UniqueFd listen_;
  UniqueFd wake_;  // eventfd that stops the receiver
  std::vector<UniqueFd> out_;
  std::vector<std::unique_ptr<std::mutex>> outMu_;
  std::thread receiver_;

  Mailbox mailbox_;  // a peer whose connection ended is closed in it
  std::atomic<bool> stop_{false};
};

}  // namespace tide::transport::shm
