#pragma once
// A test-only seam into the executor: what a test (or `tide sync --poison /
// --corrupt-rank`, the CLI's test flags) does to a run to show that
// verification catches a byte the transfer missed or got wrong. Production
// runs leave ExecOptions::hooks empty; the executor then does none of it.

#include <cstdint>
#include <memory>
#include <span>

namespace tide::exec {

class ExecHooks {
 public:
  virtual ~ExecHooks() = default;
  // Inference shards start from a poison pattern instead of version 0, so a
  // byte the transfer misses cannot pass verification.
  virtual bool poisonTargets() const { return false; }
  // After rank `rank`'s transfer of `step`, before it verifies: the
  // inference shard the update wrote.
  virtual void afterTransfer(int rank, int step, std::span<uint8_t> inferShard) const {
    (void)rank;
    (void)step;
    (void)inferShard;
  }
};

// The hooks the tests and the CLI's test flags use.
class TestHooks final : public ExecHooks {
 public:
  bool poison = false;
  // Flips one byte of this rank's inference shard after the transfer of
  // step `corruptStep`, so verification must fail.
  int corruptRank = -1;
  int corruptStep = 1;

  bool poisonTargets() const override { return poison; }
  void afterTransfer(int rank, int step, std::span<uint8_t> shard) const override {
    if (rank == corruptRank && step == corruptStep && !shard.empty()) shard[shard.size() / 2] ^= 1;
  }
};

inline std::shared_ptr<const ExecHooks> poisonedTargets() {
  auto h = std::make_shared<TestHooks>();
  h->poison = true;
  return h;
}

inline std::shared_ptr<const ExecHooks> corruptShardOf(int rank, int step = 1) {
  auto h = std::make_shared<TestHooks>();
  h->corruptRank = rank;
  h->corruptStep = step;
  return h;
}

}  // namespace tide::exec
