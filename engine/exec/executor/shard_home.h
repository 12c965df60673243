#pragma once
// Where a rank's training and inference shards live. The transport always
// reads and writes the rank's registered host buffers; a home elsewhere
// (device memory, device_shards.h) copies between them and the shards
// around the transfer. The executor holds one home and knows no memory kind.

#include <cstdint>
#include <limits>
#include <memory>

#include "engine/core/status.h"
#include "engine/exec/executor/rank_layout.h"
#include "engine/exec/executor/shard_source.h"
#include "workloads/weights.h"

namespace tide::exec {

class ShardHome {
 public:
  virtual ~ShardHome() = default;
  // Version `version` of the training shard, where it lives (`hostTrain`:
  // the registered buffer the transport reads).
  virtual Status fillTrain(int version, uint8_t* hostTrain) = 0;
  static constexpr uint64_t kAllStaged = std::numeric_limits<uint64_t>::max();

  // Before the transfer: starts copying the shard into the registered
  // training buffer; bucketed staging lands while the transfer runs.
  virtual Status beforeTransfer() = 0;
  // How many leading bytes of the registered training buffer hold the
  // shard so far (kAllStaged once all of it does): the transfer reads only
  // below. Never blocks.
  virtual Result<uint64_t> trainReady() { return kAllStaged; }
  // After the transfer (and after the start version was loaded into the
  // registered inference buffer): the training copy is over, and the shard
  // gets that buffer's bytes.
  virtual Status afterTransfer() = 0;
  // The last step's staging copies (0 where nothing is staged): `out`, from
  // beforeTransfer until the training shard had landed in full in the
  // registered buffer; `in`, the inference shard's copy from its buffer.
  struct StagingTimes {
    double outSeconds = 0, inSeconds = 0;
  };
  virtual StagingTimes stagingTimes() const { return {}; }
  // As verifyInferShard, on the inference shard where it lives
  // (`hostInfer`: the registered buffer the update wrote).
  virtual Result<uint64_t> verifyInfer(int version, const uint8_t* hostInfer) const = 0;
};

// The shards are the registered host buffers themselves.
std::unique_ptr<ShardHome> makeHostShardHome(const workloads::SyntheticWeights& weights,
                                             const RankLayout& layout, int rank);
// The shards are the registered host buffers, their contents the caller's
// (`source` must outlive the home).
std::unique_ptr<ShardHome> makeSourceShardHome(ShardSource& source, const RankLayout& layout,
                                               int rank);

}  // namespace tide::exec
