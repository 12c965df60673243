#pragma once
// What a connection's threads need from the transport that owns them.

#include <atomic>
#include <cstdint>
#include <vector>

#include "engine/core/status.h"
#include "engine/transport/region_table.h"
#include "engine/transport/tcp/tcp_batch.h"

namespace tide::transport::tcp {

class StreamHost {
 public:
  virtual ~StreamHost() = default;
  // A slice's outcome is known; its memory is no longer touched.
  virtual void sliceDone(const Slice& slice, const Status& status) = 0;
  // A connection to `peer` failed; the peer is treated as gone.
  virtual void peerFailed(int peer, const Status& status) = 0;
  // A connection to `peer` was closed by it between messages, with nothing
  // of ours outstanding on it; the peer is gone once all of them are.
  virtual void connectionClosed(int peer) = 0;
  // A WRITE_WITH_IMM from `peer` was placed.
  virtual void notify(int peer, uint32_t imm) = 0;
  virtual void deliverControl(int peer, uint32_t tag, std::vector<uint8_t> bytes) = 0;
  virtual RegionTable& regions() = 0;
  virtual const std::atomic<bool>& stopping() const = 0;
  virtual double opTimeoutSeconds() const = 0;
};

}  // namespace tide::transport::tcp
