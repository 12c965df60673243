#include "engine/data/rollout_bus.h"

#include <gtest/gtest.h>

#include <thread>

#include "tests/engine/data/pair_fixture.h"

namespace tide::data {
namespace {

Batch rows(int64_t n, int32_t tag) {
  std::vector<std::vector<int32_t>> t(n);
  for (int64_t i = 0; i < n; ++i) t[i].assign(size_t(1 + i % 7), tag * 1000 + int32_t(i));
  Batch b;
  orThrow(b.add("tokens", orThrow(Column::fromRows(t))));
  return b;
}

TEST(RolloutBus, SyncStepsSplitRowsAcrossConsumers) {
  MemoryStore kv;
  auto ranks = testing::makeRanks("shm", kv, 4);  // 2 producers, 2 consumers
  if (ranks.empty()) GTEST_SKIP() << "shm backend not compiled";
  BusConfig cfg;
  cfg.producers = 2;
  cfg.consumers = 2;
  cfg.timeoutSeconds = 10;
  std::vector<std::thread> threads;
  std::vector<Status> errors(4);
  std::vector<int64_t> got(2, 0);
  for (int p = 0; p < 2; ++p)
    threads.emplace_back([&, p] {
      RolloutProducer prod(*ranks[p].store, kv, cfg, p);
      for (int step = 0; step < 3 && errors[p].isOk(); ++step) {
        errors[p] = prod.putStep(step, rows(10, p * 10 + step));
        if (errors[p].isOk()) errors[p] = prod.endStep(step);
      }
    });
  for (int c = 0; c < 2; ++c)
    threads.emplace_back([&, c] {
      RolloutConsumer cons(*ranks[2 + c].store, kv, cfg, c);
      for (int step = 0; step < 3 && errors[2 + c].isOk(); ++step) {
        auto r = cons.getStep(step);
        if (!r.isOk()) {
          errors[2 + c] = r.status();
          break;
        }
        for (size_t p = 0; p < r->size(); ++p) {
          const Column& t = *orThrow((*r)[p].column("tokens"));
          // Consumer c holds rows [5c, 5c+5) of producer p's batch.
          EXPECT_EQ(t.row<int32_t>(0)[0], int32_t((p * 10 + step) * 1000 + 5 * c));
          got[c] += t.rows();
        }
        errors[2 + c] = cons.endStep(step);
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors) EXPECT_TRUE(e.isOk()) << e.toString();
  EXPECT_EQ(got[0] + got[1], 2 * 3 * 10);
  EXPECT_EQ(ranks[0].store->holding(), 0u);
}

TEST(RolloutBus, AsyncQueueIsBoundedAndDropsStaleBatches) {
  MemoryStore kv;
  auto ranks = testing::makeRanks("shm", kv, 2);
  if (ranks.empty()) GTEST_SKIP() << "shm backend not compiled";
  BusConfig cfg;
  cfg.mode = BusMode::kAsync;
  cfg.queueCapacity = 2;
  cfg.maxStaleness = 1;
  cfg.timeoutSeconds = 0.3;
  RolloutProducer prod(*ranks[0].store, kv, cfg, 0);
  ASSERT_TRUE(prod.put(rows(4, 1), 0).isOk());
  ASSERT_TRUE(prod.put(rows(4, 2), 1).isOk());
  // Queue full and nobody consumes: a clear timeout, not a hang.
  EXPECT_EQ(prod.put(rows(4, 3), 3).code(), Code::kTimeout);

  ReplayBuffer replay({8, 2});
  RolloutConsumer cons(*ranks[1].store, kv, cfg, 0, &replay);
  // Trainer is at version 2: the version-0 batch is 2 behind and dropped.
  auto d = orThrow(cons.get(2));
  EXPECT_EQ(d.weightVersion, 1);
  EXPECT_EQ(d.staleness, 1);
  EXPECT_EQ(cons.stats().dropped, 1);
  EXPECT_EQ(replay.size(), 1u);
  // The timed-out put took slot 2 without publishing; room now exists for new puts.
  EXPECT_EQ(cons.get(2).status().code(), Code::kTimeout);
  ASSERT_TRUE(prod.put(rows(4, 4), 2).isOk());
  auto d2 = orThrow(cons.get(2));
  EXPECT_EQ(d2.weightVersion, 2);
  EXPECT_EQ(orThrow(d2.batch.column("tokens"))->row<int32_t>(0)[0], 4000);
  EXPECT_GE(orThrow(prod.reap()) + 0, 0);
}

TEST(ReplayBuffer, EvictionNeverFreesALeasedBatch) {
  PoolConfig pc;
  pc.classes = {{4096, 2}};
  pc.policy = ExhaustedPolicy::kFail;
  auto pool = orThrow(BufferPool::create(nullptr, pc));
  auto make = [&](int v) {
    auto lease = std::make_shared<Lease>(orThrow(pool->acquire(64)));
    std::memset(lease->data(), v, 64);
    Batch b;
    orThrow(
        b.add("x", orThrow(Column::dense(DType::kU8, {64}, BufferRef{lease, lease->data(), 64}))));
    return std::make_shared<const Batch>(std::move(b));
  };
  ReplayBuffer rb({1, 1});
  rb.add(make(1), 0);
  std::mt19937_64 rng(1);
  auto held = rb.sample(1, Sampling::kUniform, rng);
  rb.add(make(2), 1);  // capacity 1: evicts version 0, which `held` still leases
  EXPECT_EQ(rb.size(), 1u);
  EXPECT_EQ(pool->stats().leasesOut, 2u);
  EXPECT_EQ(orThrow(held[0].batch->column("x"))->values<uint8_t>()[63], 1);
  held.clear();
  EXPECT_EQ(pool->stats().leasesOut, 1u);
  EXPECT_EQ(rb.sample(3, Sampling::kNewestFirst, rng).size(), 1u);
  EXPECT_EQ(rb.sample(3, Sampling::kUniform, rng).size(), 3u);
  EXPECT_EQ(rb.evictOlderThan(3), 1u);
  EXPECT_EQ(pool->stats().leasesOut, 0u);
  EXPECT_EQ(rb.evicted(), 2u);
}

}  // namespace
}  // namespace tide::data
