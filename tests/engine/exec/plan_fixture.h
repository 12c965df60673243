#pragma once
// A small real plan for executor tests: tiny-moe, train tp=2,pp=2,ep=2 ->
// two inference engines tp=2,ep=2 (bf16 unless asked), on a 4-node test cluster.

#include "engine/plan/reshard.h"
#include "engine/sync/strategy_registry.h"
#include "workloads/layout.h"
#include "workloads/model.h"

namespace tide::exec {

struct PlanFixture {
  workloads::ModelInventory inv;
  workloads::TrainLayout train;
  workloads::InferLayout infer;
  workloads::ClusterSpec cluster;
  plan::TransferPlan base, plan;
  plan::Reshard reshard;

  PlanFixture(const char* strategy, uint64_t bucketBytes,
              workloads::DType inferDtype = workloads::DType::kBF16, bool firstUpdate = false) {
    auto spec = orThrow(workloads::loadModel("tiny-moe"));
    spec.inferDtype = inferDtype;  // tiny-moe serves FP8 (block 16)
    train = orThrow(workloads::parseTrainLayout("tp=2,pp=2,ep=2"));
    infer = orThrow(workloads::parseInferLayout("engines=2,tp=2,ep=2"));
    orThrow(workloads::validate(train, spec));
    orThrow(workloads::validate(infer, spec));
    inv = workloads::buildInventory(spec);
    base = orThrow(plan::basePlan(inv, train, infer, plan::Placement{2, false}));
    reshard = orThrow(plan::planReshard(base));
    cluster.name = "test";
    cluster.nodes = 4;
    cluster.gpusPerNode = 2;
    cluster.nicsPerNode = 1;
    cluster.nicBps = 1.25e9;
    cluster.nvlinkBps = 10e9;
    cluster.pcieD2HBps = cluster.pcieH2DBps = 10e9;
    cluster.hostMemBps = 10e9;
    sync::StrategyOptions o;
    o.bucketBytes = bucketBytes;
    o.chunkBytes = 16 * 1024;
    o.firstUpdate = firstUpdate;
    auto s = orThrow(sync::createStrategy(strategy));
    plan = orThrow(s->makePlan(sync::SyncProblem{&base, &reshard, &cluster, &train, &infer, o}));
  }
};

}  // namespace tide::exec
