#pragma once
// Rollout bus: rollout workers (producers) put batches, trainer ranks
// (consumers) get them, over BatchStores on one rendezvous Store.
//
//  * sync mode: per step, every producer publishes one batch; consumer c of C
//    reads its row share [c*n/C, (c+1)*n/C) of each (row-range reads); a
//    store barrier ends the step and the producers reap the step's objects.
//  * async mode: one bounded queue. A producer waits for room (at most
//    `queueCapacity` batches published and not yet consumed), tags each batch
//    with the weight version that generated it and publishes it. A consumer
//    claims the next slot; a batch more than `maxStaleness` versions behind
//    the trainer is dropped (never transferred) or accepted, per policy.
// Consumers can keep what they fetched in a ReplayBuffer.

#include <cstdint>
#include <string>
#include <vector>

#include "engine/data/batch_store.h"
#include "engine/data/replay_buffer.h"

namespace tide::data {

enum class BusMode : uint8_t { kSync = 0, kAsync = 1 };
enum class StalePolicy : uint8_t { kDrop = 0, kAccept = 1 };
const char* busModeName(BusMode m);  // "sync" | "async"
Result<BusMode> parseBusMode(const std::string& text);
Result<StalePolicy> parseStalePolicy(const std::string& text);  // "drop" | "accept"

struct BusConfig {
  BusMode mode = BusMode::kSync;
  int producers = 1;
  int consumers = 1;
  int queueCapacity = 4;     // async
  int64_t maxStaleness = 1;  // async, in weight versions
  StalePolicy stalePolicy = StalePolicy::kDrop;
  std::string name = "bus";  // store key prefix; one bus per name
  double timeoutSeconds = 30;
  int64_t totalBatches = 0;  // async: get() reports kOutOfRange past this many slots (0: no end)
};

struct BusStats {
  int64_t batches = 0;
  int64_t rows = 0;
  int64_t dropped = 0;             // async: stale batches dropped
  int64_t acceptedStale = 0;       // async: stale batches accepted
  std::vector<int64_t> staleness;  // per consumed batch
};

class RolloutProducer {
 public:
  RolloutProducer(BatchStore& store, Store& kv, BusConfig config, int index);
  // sync
  Status putStep(int64_t step, const Batch& batch);
  Status endStep(int64_t step);
  // async: blocks (up to the timeout) for queue room, then publishes.
  Status put(Batch batch, int64_t weightVersion);
  // Releases objects every reader finished with.
  Result<int> reap() { return store_.reap(); }

 private:
  BatchStore& store_;
  Store& kv_;
  BusConfig config_;
  int index_;
};

struct Delivered {
  Batch batch;
  int64_t weightVersion = 0;
  int64_t staleness = 0;
};

class RolloutConsumer {
 public:
  RolloutConsumer(BatchStore& store, Store& kv, BusConfig config, int index,
                  ReplayBuffer* replay = nullptr);
  // sync: this consumer's rows of every producer's batch of `step`.
  Result<std::vector<Batch>> getStep(int64_t step, const ReadSpec& base = {});
  Status endStep(int64_t step);
  // async: the next batch no more than maxStaleness behind currentVersion
  // (under the drop policy) or the next batch at all (accept).
  Result<Delivered> get(int64_t currentVersion, const ReadSpec& spec = {});
  const BusStats& stats() const { return stats_; }

 private:
  BatchStore& store_;
  Store& kv_;
  BusConfig config_;
  int index_;
  ReplayBuffer* replay_;
  BusStats stats_;
};

std::string stepBatchId(const BusConfig& c, int64_t step, int producer);
std::string queueBatchId(const BusConfig& c, int64_t seq);

}  // namespace tide::data
