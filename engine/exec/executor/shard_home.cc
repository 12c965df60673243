#include "engine/exec/executor/shard_home.h"

#include "engine/exec/executor/shard_content.h"

namespace tide::exec {

namespace {

class HostShards final : public ShardHome {
 public:
  HostShards(const workloads::SyntheticWeights& weights, const RankLayout& layout, int rank)
      : weights_(weights), layout_(layout), rank_(rank) {}

  Status fillTrain(int version, uint8_t* hostTrain) override {
    return fillTrainShard(weights_, layout_, version, hostTrain);
  }
  Status beforeTransfer() override { return Status::ok(); }
  Status afterTransfer() override { return Status::ok(); }
  Result<uint64_t> verifyInfer(int version, const uint8_t* hostInfer) const override {
    return verifyInferShard(weights_, layout_, rank_, version, hostInfer);
  }

 private:
  const workloads::SyntheticWeights& weights_;
  const RankLayout& layout_;
  int rank_;
};

class SourceShards final : public ShardHome {
 public:
  SourceShards(ShardSource& source, const RankLayout& layout, int rank)
      : source_(source), layout_(layout), rank_(rank) {}

  Status fillTrain(int version, uint8_t* hostTrain) override {
    return source_.fillTrain(layout_, version, hostTrain);
  }
  Status beforeTransfer() override { return Status::ok(); }
  Status afterTransfer() override { return Status::ok(); }
  Result<uint64_t> verifyInfer(int version, const uint8_t* hostInfer) const override {
    return source_.verifyInfer(layout_, rank_, version, hostInfer);
  }

 private:
  ShardSource& source_;
  const RankLayout& layout_;
  int rank_;
};

}  // namespace

std::unique_ptr<ShardHome> makeSourceShardHome(ShardSource& source, const RankLayout& layout,
                                               int rank) {
  return std::make_unique<SourceShards>(source, layout, rank);
}

std::unique_ptr<ShardHome> makeHostShardHome(const workloads::SyntheticWeights& weights,
                                             const RankLayout& layout, int rank) {
  return std::make_unique<HostShards>(weights, layout, rank);
}

}  // namespace tide::exec
