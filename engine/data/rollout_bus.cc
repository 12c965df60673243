#include "engine/data/rollout_bus.h"

#include <thread>

#include "engine/core/clock.h"

namespace tide::data {

const char* busModeName(BusMode m) {
  return m == BusMode::kSync ? "sync" : "async";
}

Result<BusMode> parseBusMode(const std::string& text) {
  if (text == "sync") return BusMode::kSync;
  if (text == "async") return BusMode::kAsync;
  return TIDE_ERROR(Code::kInvalidArgument, "bus mode must be sync or async, got '" + text + "'");
}

Result<StalePolicy> parseStalePolicy(const std::string& text) {
  if (text == "drop") return StalePolicy::kDrop;
  if (text == "accept") return StalePolicy::kAccept;
  return TIDE_ERROR(Code::kInvalidArgument,
                    "stale policy must be drop or accept, got '" + text + "'");
}
namespace {

std::string key(const BusConfig& c, const std::string& k) {
  return c.name + "/" + k;
}

Result<int64_t> weightVersionOf(const Manifest& m) {
  auto meta = nlohmann::json::parse(m.metaJson);
  if (!meta.contains("weight_version") || !meta["weight_version"].is_number_integer())
    return TIDE_ERROR(Code::kInvalidArgument,
                      "batch '" + m.id + "' carries no integer meta weight_version");
  return meta["weight_version"].get<int64_t>();
}

}  // namespace

std::string stepBatchId(const BusConfig& c, int64_t step, int producer) {
  return c.name + "/s" + std::to_string(step) + "/p" + std::to_string(producer);
}

std::string queueBatchId(const BusConfig& c, int64_t seq) {
  return c.name + "/q" + std::to_string(seq);
}

RolloutProducer::RolloutProducer(BatchStore& store, Store& kv, BusConfig config, int index)
    : store_(store), kv_(kv), config_(std::move(config)), index_(index) {}

Status RolloutProducer::putStep(int64_t step, const Batch& batch) {
  Batch tagged = batch;
  tagged.meta()["weight_version"] = step;
  return store_.put(stepBatchId(config_, step, index_), tagged, PutOptions{config_.consumers});
}

Status RolloutProducer::endStep(int64_t step) {
  TIDE_RETURN_IF_ERROR(storeBarrier(kv_, key(config_, "step" + std::to_string(step)),
                                    config_.producers + config_.consumers, config_.timeoutSeconds));
  return store_.reap().status();
}

Status RolloutProducer::put(Batch batch, int64_t weightVersion) {
  TIDE_ASSIGN_OR_RETURN(int64_t next, kv_.add(key(config_, "q/next"), 1));
  int64_t seq = next - 1;
  Deadline deadline = Deadline::after(config_.timeoutSeconds);
  // Bounded queue: wait until fewer than queueCapacity batches are in flight.
  while (true) {
    TIDE_RETURN_IF_ERROR(store_.reap().status());
    TIDE_ASSIGN_OR_RETURN(int64_t finished, kv_.add(key(config_, "q/finished"), 0));
    if (seq - finished < config_.queueCapacity) break;
    if (deadline.expired())
      return TIDE_ERROR(Code::kTimeout, "rollout queue full for " +
                                            std::to_string(config_.timeoutSeconds) +
                                            " s (no consumer progress)");
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  batch.meta()["weight_version"] = weightVersion;
  batch.meta()["producer"] = index_;
  return store_.put(queueBatchId(config_, seq), batch, PutOptions{1});
}

RolloutConsumer::RolloutConsumer(BatchStore& store, Store& kv, BusConfig config, int index,
                                 ReplayBuffer* replay)
    : store_(store), kv_(kv), config_(std::move(config)), index_(index), replay_(replay) {}

Result<std::vector<Batch>> RolloutConsumer::getStep(int64_t step, const ReadSpec& base) {
  std::vector<Batch> out;
  for (int p = 0; p < config_.producers; ++p) {
    std::string id = stepBatchId(config_, step, p);
    TIDE_ASSIGN_OR_RETURN(Manifest m, store_.manifest(id, config_.timeoutSeconds));
    ReadSpec spec = base;
    int64_t n = m.rows, c = index_, cs = config_.consumers;
    spec.rows = {{n * c / cs, n * (c + 1) / cs}};
    TIDE_ASSIGN_OR_RETURN(Batch b, store_.read(m, spec));
    TIDE_RETURN_IF_ERROR(store_.done(id));
    ++stats_.batches;
    stats_.rows += b.rows();
    stats_.staleness.push_back(0);
    if (replay_) replay_->add(std::make_shared<const Batch>(b), step);
    out.push_back(std::move(b));
  }
  return out;
}

Status RolloutConsumer::endStep(int64_t step) {
  return storeBarrier(kv_, key(config_, "step" + std::to_string(step)),
                      config_.producers + config_.consumers, config_.timeoutSeconds);
}

Result<Delivered> RolloutConsumer::get(int64_t currentVersion, const ReadSpec& spec) {
  while (true) {
    TIDE_ASSIGN_OR_RETURN(int64_t claim, kv_.add(key(config_, "q/claim"), 1));
    if (config_.totalBatches > 0 && claim > config_.totalBatches)
      return TIDE_ERROR(Code::kOutOfRange, "rollout queue drained (" +
                                               std::to_string(config_.totalBatches) + " batches)");
    std::string id = queueBatchId(config_, claim - 1);
    TIDE_ASSIGN_OR_RETURN(Manifest m, store_.manifest(id, config_.timeoutSeconds));
    TIDE_ASSIGN_OR_RETURN(int64_t version, weightVersionOf(m));
    int64_t staleness = currentVersion - version;
    bool stale = staleness > config_.maxStaleness;
    if (stale && config_.stalePolicy == StalePolicy::kDrop) {
      // Never transferred: the producer reaps it on our done().
      TIDE_RETURN_IF_ERROR(store_.done(id));
      TIDE_RETURN_IF_ERROR(kv_.add(key(config_, "q/finished"), 1).status());
      ++stats_.dropped;
      continue;
    }
    auto b = store_.read(m, spec);
    // Finish the slot even on a failed read, so producers are not wedged.
    TIDE_RETURN_IF_ERROR(store_.done(id));
    TIDE_RETURN_IF_ERROR(kv_.add(key(config_, "q/finished"), 1).status());
    if (!b.isOk()) return b.status();
    if (stale) ++stats_.acceptedStale;
    ++stats_.batches;
    stats_.rows += b->rows();
    stats_.staleness.push_back(staleness);
    if (replay_) replay_->add(std::make_shared<const Batch>(*b), version);
    return Delivered{std::move(b).value(), version, staleness};
  }
}

}  // namespace tide::data
