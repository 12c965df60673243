// The executor over the caller's tensors (TensorShards): a trainer's whole
// tensors reach every engine's tensors bit-exact through p2p and broadcast
// plans made from a list of tensors; a byte the transfer got wrong fails
// verification and leaves the engine's tensors as they were; bad input is
// refused with the reason.

#include "engine/exec/executor/tensor_shards.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <thread>

#include "engine/exec/executor/exec_hooks.h"
#include "engine/exec/rank/rank_executor.h"
#include "engine/sync/strategy_registry.h"
#include "engine/sync/update_problem.h"
#include "engine/transport/registry.h"

namespace tide::exec {
namespace {

struct Tensor {
  std::string name;
  std::vector<uint64_t> shape;
  workloads::DType dtype;
};

const std::vector<Tensor> kTensors = {
    {"embed.weight", {97, 24}, workloads::DType::kFP32},
    {"layer.0.weight", {3, 5, 7}, workloads::DType::kBF16},
    {"layer.0.bias", {1}, workloads::DType::kFP16},
    {"head.weight", {24, 97}, workloads::DType::kFP32},
};

uint64_t bytesOf(const Tensor& t) {
  uint64_t n = workloads::bytesOf(t.dtype);
  for (uint64_t d : t.shape) n *= d;
  return n;
}

workloads::ModelInventory inventory() {
  workloads::ModelInventory inv;
  inv.name = "tensors";
  for (const auto& t : kTensors) {
    workloads::TensorSpec s;
    s.name = t.name;
    s.shape = t.shape;
    s.trainDtype = s.inferDtype = t.dtype;
    inv.tensors.push_back(s);
  }
  return inv;
}

Result<std::unique_ptr<sync::UpdateProblem>> problem(const std::string& strategy, int engines,
                                                     int trainDp = 1) {
  sync::UpdateSpec u;
  u.modelName = "tensors";
  u.train.dp = trainDp;
  u.infer.engines = engines;
  TIDE_ASSIGN_OR_RETURN(u.cluster, workloads::loadCluster("emulated:nodes=1,gpus=8,nic=10Gbps"));
  u.placement = plan::Placement{u.cluster.gpusPerNode, false, /*inferFirstGpu=*/trainDp};
  TIDE_ASSIGN_OR_RETURN(u.strategy, sync::findStrategy(strategy));
  u.options.bucketBytes = 4096;  // several buckets on broadcast
  u.tensors = inventory();
  return sync::UpdateProblem::build(std::move(u));
}

// Every rank's whole tensors: the trainers' filled from `seed`, the
// engines' zero.
using Memory = std::vector<std::vector<uint8_t>>;
Memory tensorsOf(bool trainer, uint32_t seed) {
  Memory m;
  std::mt19937 rng(seed);
  for (const auto& t : kTensors) {
    std::vector<uint8_t> b(bytesOf(t), 0);
    if (trainer)
      for (auto& x : b) x = static_cast<uint8_t>(rng());
    m.push_back(std::move(b));
  }
  return m;
}

struct Outcome {
  std::vector<Memory> memory;   // by rank
  std::vector<Status> outcome;  // of the last step, by rank
  int staleDigests = 0;         // digest keys of versions before the last left in the store
};

// `steps` updates on every rank as threads over `backend`; before step k the
// trainers' tensors are refilled from seed k.
Outcome runAll(const plan::TransferPlan& plan, const std::string& backend, int steps,
               std::shared_ptr<const ExecHooks> hooks = nullptr) {
  const int world = static_cast<int>(plan.ranks.size());
  auto layouts = orThrow(RankLayout::buildAll(plan));
  Outcome run;
  run.outcome.assign(world, Status::ok());
  for (int r = 0; r < world; ++r)
    run.memory.push_back(tensorsOf(plan.ranks[r].role == plan::Role::kTrainer, 1));
  MemoryStore store;
  workloads::ModelInventory inv = inventory();
  workloads::SyntheticWeights unused(inv, {}, {}, 0);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      Status& out = run.outcome[r];
      transport::TransportConfig c;
      c.backend = backend;
      c.rank = r;
      c.worldSize = world;
      PrefixStore ts(store, "transport/"), es(store, "exec/");
      c.store = &ts;
      auto t = transport::createTransport(c);
      if (!t.isOk()) return void(out = t.status());
      std::vector<std::span<uint8_t>> spans;
      for (auto& b : run.memory[r]) spans.emplace_back(b);
      auto shards = TensorShards::create(plan, layouts, r, spans, es, 30);
      if (!shards.isOk()) return void(out = shards.status());
      ExecOptions eo;
      eo.shardSource = shards->get();
      eo.hooks = hooks;
      auto ex = RankExecutor::create(plan, layouts, unused, **t, es, eo);
      if (!ex.isOk()) return void(out = ex.status());
      const bool trainer = plan.ranks[r].role == plan::Role::kTrainer;
      for (int k = 1; k <= steps; ++k) {
        if (trainer) {  // in place: the shards point at these bytes
          const Memory fresh = tensorsOf(true, static_cast<uint32_t>(k));
          for (size_t t = 0; t < fresh.size(); ++t)
            std::copy(fresh[t].begin(), fresh[t].end(), run.memory[r][t].begin());
        }
        out = (*ex)->runStep(k, nullptr).status();
        if (!out.isOk()) return;
        if (!trainer) out = (*shards)->unload(layouts[r], (*ex)->liveShard().data());
        if (!out.isOk()) return;
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int v = 1; v < steps; ++v)
    for (int r = 0; r < world; ++r)
      run.staleDigests +=
          store.get("exec/tensor-digests/" + std::to_string(v) + "/" + std::to_string(r), 0.001)
              .isOk();
  return run;
}

class TensorShardsSync : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(TensorShardsSync, EveryEngineEndsWithTheTrainersTensors) {
  const auto& [strategy, backend] = GetParam();
  if (const std::string why = transport::whyCannotRunHere(backend); !why.empty())
    GTEST_SKIP() << "skipped: " << why;
  auto pr = orThrow(problem(strategy, 3));
  auto plan = orThrow(pr->makePlan());
  Outcome run = runAll(plan, backend, 2);
  const Memory want = tensorsOf(true, 2);
  for (size_t r = 0; r < plan.ranks.size(); ++r) {
    ASSERT_TRUE(run.outcome[r].isOk()) << "rank " << r << ": " << run.outcome[r].toString();
    for (size_t t = 0; t < want.size(); ++t)
      EXPECT_EQ(run.memory[r][t], want[t]) << "rank " << r << " " << kTensors[t].name;
  }
  EXPECT_EQ(run.staleDigests, 0) << "each engine erases the digests of the version before";
}

INSTANTIATE_TEST_SUITE_P(Strategies, TensorShardsSync,
                         ::testing::Combine(::testing::Values("p2p", "broadcast", "p2p-rr"),
                                            ::testing::Values("shm", "tcp")));

TEST(TensorShards, TwoTrainerReplicasFeedTheEngines) {
  auto plan = orThrow(orThrow(problem("p2p", 2, /*trainDp=*/2))->makePlan());
  Outcome run = runAll(plan, "shm", 1);
  const Memory want = tensorsOf(true, 1);
  for (size_t r = 0; r < plan.ranks.size(); ++r) {
    ASSERT_TRUE(run.outcome[r].isOk()) << run.outcome[r].toString();
    EXPECT_EQ(run.memory[r], want) << "rank " << r;
  }
}

TEST(TensorShards, AByteTheTransferGotWrongFailsAndTheEngineKeepsItsTensors) {
  auto plan = orThrow(orThrow(problem("p2p", 2))->makePlan());
  const int bad = static_cast<int>(plan.ranks.size()) - 1;  // an engine
  Outcome run = runAll(plan, "shm", 1, corruptShardOf(bad, 1));
  EXPECT_EQ(run.outcome[bad].code(), Code::kDataLoss) << run.outcome[bad].toString();
  EXPECT_NE(run.outcome[bad].toString().find("is not the trainer's version 1"), std::string::npos)
      << run.outcome[bad].toString();
  EXPECT_EQ(run.memory[bad], tensorsOf(false, 0));  // not written: still the start
}

TEST(TensorShards, PoisonedStartShardsStillEndBitExact) {
  // A byte the plan does not write would keep the poison and fail.
  auto plan = orThrow(orThrow(problem("broadcast", 2))->makePlan());
  Outcome run = runAll(plan, "shm", 1, poisonedTargets());
  for (size_t r = 0; r < plan.ranks.size(); ++r)
    ASSERT_TRUE(run.outcome[r].isOk()) << run.outcome[r].toString();
}

TEST(TensorShards, RefusesWhatItCannotMoveAsIs) {
  auto plan = orThrow(orThrow(problem("p2p", 1))->makePlan());
  auto layouts = orThrow(RankLayout::buildAll(plan));
  MemoryStore store;
  Memory m = tensorsOf(true, 1);
  std::vector<std::span<uint8_t>> spans(m.begin(), m.end());
  spans.pop_back();
  auto few = TensorShards::create(plan, layouts, 0, spans, store, 1);
  EXPECT_EQ(few.status().code(), Code::kInvalidArgument);
  spans.emplace_back(m.back().data(), m.back().size() - 4);
  auto shortOne = TensorShards::create(plan, layouts, 0, spans, store, 1);
  EXPECT_NE(shortOne.status().toString().find("head.weight has"), std::string::npos)
      << shortOne.status().toString();

  sync::UpdateSpec u;
  u.train.tp = 2;
  u.cluster = orThrow(workloads::loadCluster("emulated:nodes=1,gpus=8,nic=10Gbps"));
  u.placement = plan::Placement{8, false};
  u.strategy = orThrow(sync::findStrategy("p2p"));
  u.tensors = inventory();
  auto split = sync::UpdateProblem::build(u);
  EXPECT_NE(split.status().toString().find("carries no split rules"), std::string::npos)
      << split.status().toString();
  u.train.tp = 1;
  u.strategy = orThrow(sync::findStrategy("miles-broadcast"));
  auto counts = sync::UpdateProblem::build(u);
  EXPECT_NE(counts.status().toString().find("plans from a model's architecture"), std::string::npos)
      << counts.status().toString();
}

TEST(TensorShards, ADigestThatIsNotHexIsDataLoss) {
  auto plan = orThrow(orThrow(problem("p2p", 1))->makePlan());
  auto layouts = orThrow(RankLayout::buildAll(plan));
  MemoryStore store;
  Memory m = tensorsOf(false, 0);
  std::vector<std::span<uint8_t>> spans(m.begin(), m.end());
  auto s = orThrow(TensorShards::create(plan, layouts, 1, spans, store, 1));
  const size_t blocks = layouts[1].placed(plan::Space::kInfer).size();
  std::vector<uint8_t> shard(layouts[1].spaceBytes(plan::Space::kInfer));
  ASSERT_TRUE(store.set("tensor-digests/1/1", std::string(blocks * 16, 'z')).isOk());
  EXPECT_EQ(s->verifyInfer(layouts[1], 1, 1, shard.data()).status().code(), Code::kDataLoss);
  ASSERT_TRUE(store.set("tensor-digests/1/1", "0123").isOk());
  EXPECT_EQ(s->verifyInfer(layouts[1], 1, 1, shard.data()).status().code(), Code::kDataLoss);
  EXPECT_EQ(s->verifyInfer(layouts[1], 1, 2, shard.data()).status().code(), Code::kTimeout);
}

}  // namespace
}  // namespace tide::exec
