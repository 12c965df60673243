#pragma once
// A ShardSource over whole tensors in the caller's memory (tide from Python:
// a trainer's parameters, an engine's copy), one per plan tensor, row-major.
// Any layout works: a rank copies its own boxes out of the whole tensors.
//
// Verification, independent of the transfer: the first training rank
// publishes, for each version, the XXH3 of every inference block of every
// rank, hashed from its tensors (not from the shard the transfer reads);
// an inference rank hashes what landed and compares (and erases the digests
// of the version before). Bytes are moved as
// they are, so every tensor has one dtype on both sides.

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/core/kv_store.h"
#include "engine/exec/executor/shard_source.h"
#include "engine/plan/transfer_plan.h"

namespace tide::exec {

class TensorShards final : public ShardSource {
 public:
  // `tensors[t]`: plan tensor t, whole. `plan`, `layouts`, `store` and the
  // tensors' memory must outlive this; the store should be private to the
  // run (a PrefixStore).
  static Result<std::unique_ptr<TensorShards>> create(const plan::TransferPlan& plan,
                                                      const std::vector<RankLayout>& layouts,
                                                      int rank,
                                                      std::vector<std::span<uint8_t>> tensors,
                                                      Store& store, double timeoutSeconds);

  Status fillTrain(const RankLayout& layout, int version, uint8_t* base) override;
  Status loadInfer(const RankLayout& layout, uint8_t* base) override;
  Result<uint64_t> verifyInfer(const RankLayout& layout, int rank, int version,
                               const uint8_t* base) const override;
  // Copies a verified inference shard at `base` back into the tensors (the
  // rank's boxes of them).
  Status unload(const RankLayout& layout, const uint8_t* base);

 private:
  TensorShards(const plan::TransferPlan& plan, const std::vector<RankLayout>& layouts, int rank,
               std::vector<std::span<uint8_t>> tensors, Store& store, double timeoutSeconds);
  // The runs between tensor `p.tensor`, whole, and the block placed as `p`.
  std::vector<Run> runsOf(const Placed& p) const;
  // The rank's blocks of space `s` out of the whole tensors, into `base`.
  void copyIn(const RankLayout& layout, plan::Space s, uint8_t* base) const;
  uint64_t digestOf(const Placed& p) const;
  Status publishDigests(int version) const;

  const plan::TransferPlan& plan_;
  const std::vector<RankLayout>& layouts_;
  int rank_;
  std::vector<std::span<uint8_t>> tensors_;
  Store& store_;
  double timeoutSeconds_;
  bool publishes_ = false;  // the first training rank publishes the digests
};

}  // namespace tide::exec
