#pragma once
// Control messages (Transport::send/recv) carried by the rendezvous store,
// for a backend with no byte stream of its own to carry them (rdma). Each
// message is one key, `<prefix>ctl/<from>/<to>/<tag>/<seq>`, read by exactly
// one receiver, which erases it: the store holds only the messages sent and
// not yet received, however long the run.

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/kv_store.h"

namespace tide::transport {

class StoreMailbox {
 public:
  // Whether `peer` has left (it sends nothing more): a receive waiting on
  // it then fails at once instead of after its whole timeout.
  using GoneFn = std::function<Result<bool>(int peer)>;

  // `store` outlives this.
  StoreMailbox(Store& store, std::string prefix, int rank, int worldSize, GoneFn gone,
               double sliceSeconds = 0.1);

  Status send(int peer, uint32_t tag, std::span<const uint8_t> bytes);
  // The next message from `peer` with `tag`, in the order sent: kTimeout
  // after timeoutSeconds, kUnavailable once the peer left without sending it.
  Result<std::vector<uint8_t>> recv(int peer, uint32_t tag, double timeoutSeconds);

 private:
  Status checkPeer(int peer, const char* op) const;
  std::string key(int from, int to, uint32_t tag, uint64_t seq) const;
  // Takes the message under `key`: its bytes, the key erased.
  Result<std::vector<uint8_t>> take(const std::string& key, std::string value, uint64_t& seq);

  Store& store_;
  const std::string prefix_;
  const int rank_;
  const int worldSize_;
  const GoneFn gone_;
  const double slice_;
  std::mutex mu_;  // the sequence numbers: sends and receives may come from several threads
  std::map<std::pair<int, uint32_t>, uint64_t> sendSeq_, recvSeq_;
};

}  // namespace tide::transport
