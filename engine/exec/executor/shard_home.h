#pragma once
// Where a rank's training and inference shards live. The transport always
// reads and writes the rank's registered host buffers; a home elsewhere
// (device memory, device_shards.h) copies between them and the shards
// around the transfer. The executor holds one home and knows no memory kind.

#include <cstdint>
#include <memory>

#include "engine/core/status.h"
#include "engine/exec/executor/rank_layout.h"
#include "workloads/weights.h"

namespace tide::exec {

class ShardHome {
 public:
  virtual ~ShardHome() = default;
  // Version `version` of the training shard, where it lives (`hostTrain`:
  // the registered buffer the transport reads).
  virtual Status fillTrain(int version, uint8_t* hostTrain) = 0;
  // Before the transfer: the registered training buffer gets the shard.
  virtual Status beforeTransfer() = 0;
  // After the transfer (and after the start version was loaded into the
  // registered inference buffer): the shard gets that buffer's bytes.
  virtual Status afterTransfer() = 0;
  // As verifyInferShard, on the inference shard where it lives
  // (`hostInfer`: the registered buffer the update wrote).
  virtual Result<uint64_t> verifyInfer(int version, const uint8_t* hostInfer) const = 0;
};

// The shards are the registered host buffers themselves.
std::unique_ptr<ShardHome> makeHostShardHome(const workloads::SyntheticWeights& weights,
                                             const RankLayout& layout, int rank);

}  // namespace tide::exec
