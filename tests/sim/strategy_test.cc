// End-to-end checks of the strategy models on small scenarios: the
// mechanisms (who sends, bytes per inference rank, the engines' one-request-
// at-a-time lock) show up in the results.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "engine/sync/miles/loader_scan.h"
#include "engine/sync/miles/model_shares.h"
#include "sim/scenario.h"
#include "sim/simulator.h"
#include "sim/sweep.h"
#include "tests/sim/small_scenario.h"

namespace tide::sim {
namespace {

using sync::miles::computeShares;
using sync::miles::kStackedEntries;
using sync::miles::loaderScanSteps;
using sync::miles::mapperScanSteps;
using sync::miles::ModelShares;
using sync::miles::StageBytes;

// The shares the Miles models count for a scenario (both strategies' runs
// cut the same buckets in these tests).
ModelShares sharesOf(const Scenario& sc) {
  return computeShares(sc.model, sc.train, sc.infer, sc.strategy.options.fp8Wire,
                       static_cast<double>(sc.strategy.bucketFor("miles-broadcast")));
}

// The stage of that name in a result; an empty one (no time) when absent.
StageStats stageNamed(const StrategyResult& r, const std::string& name) {
  for (const auto& s : r.stages) {
    if (s.name == name) return s;
  }
  return {};
}

TEST(Strategy, BroadcastSendsWholeModelToEveryRankP2pOnlyTheShare) {
  Scenario sc = load(scenarioText("engines=2,tp=8,ep=8", 2));
  auto b = simulate(sc, "miles-broadcast");
  auto p = simulate(sc, "miles-p2p");
  ASSERT_TRUE(b.isOk()) << b.status().toString();
  ASSERT_TRUE(p.isOk()) << p.status().toString();
  // Every bucket's broadcast reaches every rank: the bytes add up to the model.
  EXPECT_NEAR(b->bytesPerInferRank, b->wireBytes, 1e-9 * b->wireBytes);
  EXPECT_LT(p->bytesPerInferRank, b->wireBytes / 4);
  // 30B params in BF16 is ~61 GB on the wire.
  EXPECT_NEAR(b->wireBytes / 1e9, 61.0, 3.0);
  // Every rank of a time is at or above its lower bound.
  EXPECT_GE(b->seconds, b->lowerBoundSeconds);
  EXPECT_GE(p->seconds, p->lowerBoundSeconds);
  // The broadcast lower bound sits on a training head's NIC.
  EXPECT_NE(b->bottleneck.find(".nic"), std::string::npos) << b->bottleneck;
  EXPECT_FALSE(b->events.empty());
}

TEST(Strategy, BroadcastTimeTracksTheHeadNicP2pDoesNot) {
  Scenario slow = load(scenarioText("engines=2,tp=8,ep=8", 2));
  slow.cluster.nicBps /= 4;
  Scenario fast = load(scenarioText("engines=2,tp=8,ep=8", 2));
  double bFast = simulate(fast, "miles-broadcast")->seconds;
  double bSlow = simulate(slow, "miles-broadcast")->seconds;
  EXPECT_GT(bSlow, 1.8 * bFast);
}

TEST(Strategy, EngineLockSerializesStagesInBroadcast) {
  // With the per-call overhead dominant, time ~ buckets x call.
  Scenario sc =
      load(scenarioText("engines=2,tp=8,ep=8", 2, "[calibration]\nengine_call_ms = 500\n"));
  auto b = simulate(sc, "miles-broadcast");
  ASSERT_TRUE(b.isOk());
  double buckets = 0;
  ModelShares sh = sharesOf(sc);
  for (const auto& s : sh.stages) buckets += std::ceil(s.train / 1e9);
  EXPECT_GT(b->seconds, buckets * 0.5);  // serialized, not 2 stages in parallel
}

TEST(Strategy, StagesPollingTheEngineLockLeaveItFreeBetweenBuckets) {
  // The framework's stages poll the lock every 100 ms: after a release the
  // lock sits free until a waiting stage polls or the releasing stage has
  // its next bucket ready, where a first-come lock passes straight to a
  // stage already waiting. Two stages, so the lock changes hands.
  auto run = [](const char* poll) {
    auto r = simulate(
        load(scenarioText("engines=2,tp=8,ep=8", 2, std::string("lock_poll_ms = ") + poll + "\n")),
        "miles-broadcast");
    EXPECT_TRUE(r.isOk());
    return std::move(r).value();
  };
  StrategyResult fifo = run("0"), polled = run("100");
  EXPECT_GT(polled.seconds, fifo.seconds);
  EXPECT_DOUBLE_EQ(stageNamed(fifo, "lock_poll").critical, 0.0);
  EXPECT_GT(stageNamed(polled, "lock_poll").critical, 0.0);
  // The engines do the same work either way.
  EXPECT_DOUBLE_EQ(stageNamed(polled, "broadcast").bytes, stageNamed(fifo, "broadcast").bytes);
  double sum = 0;
  for (const auto& s : polled.stages) sum += s.critical;
  EXPECT_NEAR(sum, polled.seconds, 1e-9 * polled.seconds);
}

TEST(Strategy, RegistrationOnlyOnFirstUpdate) {
  Scenario steady = load(scenarioText("engines=2,tp=8,ep=8", 2));
  Scenario first = load(scenarioText("engines=2,tp=8,ep=8", 2, "first_update = true\n"));
  auto a = simulate(steady, "miles-p2p");
  auto b = simulate(first, "miles-p2p");
  ASSERT_TRUE(a.isOk() && b.isOk());
  EXPECT_EQ(a->registrationSeconds, 0);
  // Each sender registers a whole engine rank's replica (4 KiB pages) before
  // the barrier that starts the gathers: the update shifts by exactly that.
  ModelShares sh = sharesOf(first);
  EXPECT_NEAR(b->registrationSeconds,
              std::ceil(sh.sharePerRank / 4096) * first.calib.registerPerPageSeconds, 1e-9);
  EXPECT_NEAR(b->seconds - a->seconds, b->registrationSeconds, 1e-6);
}

TEST(Strategy, P2pPaysHostTimeForEveryGatheredTensor) {
  // Every training rank converts every gathered tensor of its stage (Python,
  // one tensor at a time): the host time is on the chain. With bf16 on the
  // wire the conversion is a rename and a split (2 ops), no quantization.
  Scenario none = load(scenarioText("engines=2,tp=8,ep=8", 2, "[calibration]\nhost_op_us = 0\n"));
  Scenario dflt = load(scenarioText("engines=2,tp=8,ep=8", 2));
  auto a = simulate(none, "miles-p2p");
  auto b = simulate(dflt, "miles-p2p");
  ASSERT_TRUE(a.isOk() && b.isOk());
  ModelShares sh = sharesOf(dflt);
  double fewest = 1e18;
  for (const auto& s : sh.stages) fewest = std::min(fewest, s.tensors);
  EXPECT_GT(fewest, 128 * 3);  // at least one layer of 128 experts x 3 tensors
  // The conversion alone bounds the update from below; part of it may hide
  // under the background writes of earlier layers.
  EXPECT_GE(b->seconds, fewest * 2 * dflt.calib.hostOpSeconds);
  EXPECT_GT(b->seconds - a->seconds, 0.5 * fewest * 2 * dflt.calib.hostOpSeconds);
}

TEST(Strategy, OnlyAnFp8UpdateQuantizes) {
  Scenario bf16 = load(scenarioText("engines=2,tp=8,ep=8", 2));
  bf16.cluster.hbmBps = 3.35e12;
  // The same model served in FP8 (128-blocks), FP8 on the wire.
  Scenario fp8 = bf16;
  fp8.model.inferDtype = workloads::DType::kFP8E4M3;
  fp8.model.fp8Block = 128;
  fp8.strategy.options.fp8Wire = true;
  ASSERT_TRUE(validateScenario(fp8).isOk());
  for (const char* strategy : {"miles-broadcast", "miles-p2p"}) {
    auto b = simulate(bf16, strategy);
    auto f = simulate(fp8, strategy);
    ASSERT_TRUE(b.isOk() && f.isOk());
    EXPECT_EQ(stageNamed(*b, "quantize").busy, 0.0) << strategy;
    EXPECT_GT(stageNamed(*f, "quantize").busy, 0.0) << strategy;
    // Conversion host time: the gather bookkeeping and 2 ops per tensor in
    // bf16, 3 more per tensor with the kernel's allocations and launch.
    EXPECT_GT(stageNamed(*f, "convert_host").busy, 1.5 * stageNamed(*b, "convert_host").busy)
        << strategy;
  }
}

TEST(Strategy, BucketsAreCutAtWholeTensorsAsTheFrameworkDoes) {
  // Kimi-K2 on its published layout: one local expert's fused gate/up,
  // gathered over EP 32, is 1.88 GB, its down projection 0.94 GB. With a
  // 1 GB threshold every unit is a bucket of its own: 12 local experts x 2
  // per MoE layer. With 2 GiB two down projections share a bucket.
  auto train = workloads::parseTrainLayout("tp=8,pp=8,cp=4,ep=32,etp=1,stages=8:8:8:8:8:8:8:5");
  auto infer = workloads::parseInferLayout("engines=8,tp=32,ep=32,dp_attn=8");
  auto model = workloads::loadModel("kimi-k2");
  ASSERT_TRUE(train.isOk() && infer.isOk() && model.isOk());
  ModelShares one = computeShares(*model, *train, *infer, true, 1e9);
  ModelShares two = computeShares(*model, *train, *infer, true, 2.0 * (1 << 30));
  // Stage 1 holds 8 MoE layers.
  EXPECT_EQ(one.phases[1][1].buckets, 8 * 24.0);
  EXPECT_EQ(two.phases[1][1].buckets, 8 * 18.0);
  // Qwen3-30B-A3B's units are all below 1 GB: a greedy cut fills buckets to
  // at most the threshold and any two neighbours past it, so it needs at
  // least the bytes' count of buckets and at most twice as many.
  Scenario small = load(scenarioText("engines=2,tp=8,ep=8", 2));
  ModelShares q = computeShares(small.model, small.train, small.infer, false, 1e9);
  for (int s = 0; s < small.train.pp; ++s) {
    for (int ph = 0; ph < 2; ++ph) {
      const StageBytes& b = q.phases[ph][s];
      double bytes = std::ceil(b.train / 1e9);
      EXPECT_GE(b.buckets, bytes) << s << " " << ph;
      EXPECT_LE(b.buckets, 2 * bytes) << s << " " << ph;
    }
  }
}

TEST(Strategy, PostProcessingRequantizesTheMlaLayersOfAnFp8Model) {
  // After the transfer every inference rank re-quantizes each MLA layer of a
  // model served in FP8 (kv_b_proj for the absorbed attention); a bf16 or a
  // GQA model has nothing to re-quantize.
  Scenario gqa = load(scenarioText("engines=2,tp=8,ep=8", 2));
  auto ds = workloads::loadModel("deepseek-v3");
  ASSERT_TRUE(ds.isOk());
  auto small = workloads::scaled(*ds, 16);
  ASSERT_TRUE(small.isOk());
  Scenario mla = gqa;
  mla.model = *small;
  mla.model.inferDtype = workloads::DType::kBF16;  // the zoo serves it in FP8
  Scenario mlaFp8 = mla;
  mlaFp8.model.inferDtype = workloads::DType::kFP8E4M3;
  mlaFp8.model.fp8Block = 128;
  mlaFp8.strategy.options.fp8Wire = true;
  for (const Scenario* sc : {&gqa, &mla, &mlaFp8}) ASSERT_TRUE(validateScenario(*sc).isOk());
  for (const char* strategy : {"miles-broadcast", "miles-p2p"}) {
    auto a = simulate(gqa, strategy);
    auto b = simulate(mla, strategy);
    auto c = simulate(mlaFp8, strategy);
    ASSERT_TRUE(a.isOk() && b.isOk() && c.isOk()) << strategy;
    EXPECT_EQ(stageNamed(*a, "postprocess").busy, 0.0) << strategy;
    EXPECT_EQ(stageNamed(*b, "postprocess").busy, 0.0) << strategy;
    double expect = mla.model.layers * mla.calib.mlaRequantSeconds;
    const StageStats& post = stageNamed(*c, "postprocess");
    EXPECT_NEAR(post.busy, expect, 1e-9) << strategy;
    // It ends the update: all of it is on the critical path.
    EXPECT_NEAR(post.critical, expect, 1e-9) << strategy;
  }
  // The rate over every rank's bytes it replaced is refused with its reason.
  auto old = parseScenario(
      scenarioText("engines=2,tp=8,ep=8", 2, "[calibration]\npostprocess = \"100GB/s\"\n"), "test");
  ASSERT_FALSE(old.isOk());
  EXPECT_NE(old.status().toString().find("mla_requant_ms"), std::string::npos);
}

TEST(Strategy, P2pConversionOverlapsTheGathers) {
  // CUDA runs the gathers asynchronously: the host converts a bucket while
  // the GPU gathers it. With slow NVLink (the stages' gathers stay inside a
  // node) the gathers are longer than the conversion, so the conversion is
  // off the critical path (it was all on it when the graph serialized the
  // two).
  std::string text = scenarioText("engines=2,tp=8,ep=8", 2);
  text.replace(text.find("370GB/s"), 7, "5GB/s");
  Scenario slow = load(text);
  auto r = simulate(slow, "miles-p2p");
  ASSERT_TRUE(r.isOk());
  const StageStats& conv = stageNamed(*r, "convert_host");
  const StageStats& gather = stageNamed(*r, "allgather");
  EXPECT_GT(conv.busy, 0.0);
  EXPECT_GT(gather.busy, 10 * conv.busy);
  EXPECT_LT(conv.critical, 0.01 * conv.busy);
  EXPECT_GT(gather.critical, 0.8 * gather.busy);
  // The bookkeeping that issues each gather stays on the path.
  const StageStats& issue = stageNamed(*r, "gather_issue");
  EXPECT_GT(issue.critical, 0.5 * issue.busy);
}

TEST(Strategy, QuantizationIsOnePassOverTheGpusMemory) {
  // The kernel reads 2 B and writes 1 B per element plus a 4 B scale per
  // 128 x 128 block: 1.5 B moved per BF16 byte, timed by the cluster's hbm.
  Scenario fp8 = load(scenarioText("engines=2,tp=8,ep=8", 2));
  fp8.cluster.hbmBps = 3.35e12;
  fp8.model.inferDtype = workloads::DType::kFP8E4M3;
  fp8.model.fp8Block = 128;
  fp8.strategy.options.fp8Wire = true;
  Scenario fast = fp8;
  fast.cluster.hbmBps *= 2;
  Scenario none = fp8;
  none.cluster.hbmBps = 0;
  for (const char* strategy : {"miles-broadcast", "miles-p2p"}) {
    auto r = simulate(fp8, strategy);
    auto f = simulate(fast, strategy);
    auto n = simulate(none, strategy);
    ASSERT_TRUE(r.isOk() && f.isOk() && n.isOk());
    const StageStats& q = stageNamed(*r, "quantize");
    EXPECT_GT(q.bytes, 0.0) << strategy;
    EXPECT_NEAR(q.bytes, stageNamed(*f, "quantize").bytes, 1e-6 * q.bytes) << strategy;
    if (std::string(strategy) == "miles-broadcast") {
      // Only each stage's head quantizes, the whole stage once.
      // Embeddings, norms, the router and the head stay BF16.
      ModelShares sh = sharesOf(fp8);
      double quantized = 0;
      for (const auto& st : sh.stages) quantized += st.quantTrain;
      EXPECT_LT(quantized, sh.trainTotal);
      EXPECT_NEAR(q.bytes, quantized * (1.5 + 2.0 / (128 * 128)), 1e-6 * q.bytes);
    }
    EXPECT_GT(stageNamed(*f, "quantize").busy, 0.0) << strategy;
    EXPECT_LT(stageNamed(*f, "quantize").busy, q.busy) << strategy;
    // Without an hbm figure the pass is not a limit.
    EXPECT_EQ(stageNamed(*n, "quantize").busy, 0.0) << strategy;
  }
  // The key that used to set a quantization rate is refused with its reason.
  auto old = parseScenario(
      scenarioText("engines=2,tp=8,ep=8", 2, "[calibration]\nfp8_quant = \"200GB/s\"\n"), "test");
  ASSERT_FALSE(old.isOk());
  EXPECT_NE(old.status().toString().find("[cluster] hbm"), std::string::npos);
}

// The small scenario's update time without and with the cost of a
// name-matching step, and its per-stage step counts.
struct StepCost {
  double added = 0;  // seconds the steps add
  double stepSeconds = 0;
  ModelShares shares;
};

StepCost stepCost(const std::string& strategy) {
  // A first-come engine lock: with the framework's polling, when the lock
  // changes hands depends on the steps' cost too.
  std::string text = scenarioText("engines=2,tp=8,ep=8", 2, "lock_poll_ms = 0\n");
  Scenario none = load(text + "[calibration]\npy_step_ns = 0\n");
  Scenario dflt = load(text);
  auto a = simulate(none, strategy);
  auto b = simulate(dflt, strategy);
  EXPECT_TRUE(a.isOk() && b.isOk());
  if (!a.isOk() || !b.isOk()) return {};
  return {b->seconds - a->seconds, dflt.calib.pyStepSeconds, sharesOf(dflt)};
}

TEST(Strategy, EngineLoadersMatchEveryNameAgainstTheExpertMapping) {
  // Broadcast: every engine runs its loader over the whole bucket, and the
  // name matching walks an expert mapping that grows with the expert count.
  StepCost c = stepCost("miles-broadcast");
  double steps = 0;
  for (const auto& s : c.shares.stages) steps += s.scanSteps;
  // 128 experts: an expert tensor walks 3j + shard + 1 entries after the
  // stacked list, so the mean is about 3 * 128 / 2 per expert tensor.
  EXPECT_GT(steps, c.shares.stages[0].tensors * 128);
  // The engine lock serializes both stages' engine turns: all on the chain.
  EXPECT_NEAR(c.added, steps * c.stepSeconds, 0.05 * steps * c.stepSeconds);
}

TEST(Strategy, P2pSourcesMapEveryNameOncePerBucket) {
  // 8 sources per stage, each serving 2 targets of one engine rank: each
  // source maps every gathered tensor once and loads its replica once.
  StepCost c = stepCost("miles-p2p");
  double steps = 0, mapSteps = 0;
  for (const auto& s : c.shares.stages) {
    steps = std::max(steps, s.scanSteps + s.mapSteps);
    mapSteps = std::max(mapSteps, s.mapSteps);
  }
  EXPECT_GT(c.shares.stages[0].mapSteps, c.shares.stages[0].tensors * 128);
  double expect = steps * c.stepSeconds;
  // The stages run side by side; the matching is host work that overlaps
  // the GPU's gathers of the bucket and the writes of earlier ones, so part
  // of it hides, but not all.
  EXPECT_GT(c.added, 0.3 * expect);
  EXPECT_LT(c.added, 1.05 * expect);
  // Each source maps every tensor of its stage once: on the longest stage
  // the mapping's busy time is its steps, and part of it is on the
  // critical path.
  Scenario sc = load(scenarioText("engines=2,tp=8,ep=8", 2));
  auto r = simulate(sc, "miles-p2p");
  ASSERT_TRUE(r.isOk());
  const StageStats& m = stageNamed(*r, "name_map");
  EXPECT_NEAR(m.busy, mapSteps * c.stepSeconds, 0.05 * mapSteps * c.stepSeconds);
  EXPECT_GT(m.critical, 0.0);
}

TEST(Strategy, GatheredBucketsAreCopiedOutOnTheDevice) {
  // A list all-gather lands in one flat buffer and is copied out slice by
  // slice; TP-gathered tensors are concatenated once more. Each copy reads
  // and writes every byte through the GPU's memory; with no `hbm` figure the
  // copies are not a limit and do not appear.
  std::string text = scenarioText("engines=2,tp=8,ep=8", 2);
  std::string withHbm = text;
  withHbm.replace(withHbm.find("[strategy]"), 0, "hbm = \"0.1TB/s\"\n");
  Scenario without = load(text);
  Scenario with = load(withHbm);
  ASSERT_EQ(with.cluster.hbmBps, 0.1e12);
  ModelShares sh = sharesOf(with);
  double longest = 0;
  for (const auto& s : sh.stages) {
    double copied = 2 * (s.trainExpert + 2 * (s.train - s.trainExpert));
    longest = std::max(longest, copied / with.cluster.hbmBps);
  }
  for (const char* strategy : {"miles-broadcast", "miles-p2p"}) {
    auto a = simulate(without, strategy);
    auto b = simulate(with, strategy);
    ASSERT_TRUE(a.isOk() && b.isOk());
    EXPECT_EQ(stageNamed(*a, "gather_copy").busy, 0.0) << strategy;
    EXPECT_GT(stageNamed(*b, "gather_copy").busy, longest) << strategy;
    if (std::string(strategy) == "miles-p2p") {
      // Every source copies before it converts: on the chain of the longest
      // stage, less what the background writes of earlier layers hide.
      EXPECT_GT(b->seconds - a->seconds, 0.5 * longest);
      EXPECT_LT(b->seconds - a->seconds, 1.05 * longest);
    }
  }
}

TEST(Strategy, UpdatePhasesSplitEachStageIntoNonExpertAndExpertWeights) {
  // Both strategies update every stage's non-expert weights, meet at a
  // barrier, then update the routed experts: the shares of the two phases
  // partition each stage, and the experts are all in the second.
  Scenario sc = load(scenarioText("engines=2,tp=8,ep=8", 2));
  ModelShares sh = sharesOf(sc);
  ASSERT_EQ(sh.stages.size(), 2u);
  for (size_t s = 0; s < sh.stages.size(); ++s) {
    const StageBytes &all = sh.stages[s], &dense = sh.phases[0][s], &experts = sh.phases[1][s];
    EXPECT_DOUBLE_EQ(dense.trainExpert, 0);
    EXPECT_DOUBLE_EQ(experts.train, all.trainExpert);
    EXPECT_DOUBLE_EQ(experts.trainExpert, all.trainExpert);
    EXPECT_DOUBLE_EQ(dense.train + experts.train, all.train);
    EXPECT_DOUBLE_EQ(dense.tensors + experts.tensors, all.tensors);
    EXPECT_DOUBLE_EQ(dense.mapSteps + experts.mapSteps, all.mapSteps);
    EXPECT_GT(dense.train, 0);
  }
}

TEST(Strategy, ControlRoundsAroundTheUpdate) {
  // Pause, cache flush and session open before; session close and continue
  // after; p2p bumps the weight version in one more round. All on the chain.
  Scenario sc = load(scenarioText("engines=2,tp=8,ep=8", 2));
  for (auto [strategy, rounds] : {std::pair{"miles-broadcast", 5}, std::pair{"miles-p2p", 6}}) {
    auto r = simulate(sc, strategy);
    ASSERT_TRUE(r.isOk());
    StageStats st = stageNamed(*r, "pause_resume");
    EXPECT_NEAR(st.busy, rounds * sc.calib.engineCallSeconds, 1e-12) << strategy;
    EXPECT_NEAR(st.critical, st.busy, 1e-12) << strategy;
  }
}

TEST(Strategy, UpdateSplitsIntoPrepareTransferAndFinalizeSpans) {
  // As the RL framework times an update: the opening rounds (and a first
  // update's registration) prepare it, the finalization is post-processing
  // plus the closing rounds, and the transfer is everything between.
  Scenario sc = load(scenarioText("engines=2,tp=8,ep=8", 2));
  Scenario first = load(scenarioText("engines=2,tp=8,ep=8", 2, "first_update = true\n"));
  auto ds = workloads::loadModel("deepseek-v3");  // MLA, served in FP8
  ASSERT_TRUE(ds.isOk());
  auto small = workloads::scaled(*ds, 16);
  ASSERT_TRUE(small.isOk());
  Scenario mla = sc;
  mla.model = *small;
  mla.strategy.options.fp8Wire = true;
  ASSERT_TRUE(validateScenario(mla).isOk());
  const double call = sc.calib.engineCallSeconds;
  for (auto [strategy, closing] : {std::pair{"miles-broadcast", 2}, std::pair{"miles-p2p", 3}}) {
    for (const Scenario* s : {&sc, &mla}) {
      auto r = simulate(*s, strategy);
      ASSERT_TRUE(r.isOk());
      double post = s == &mla ? s->model.layers * s->calib.mlaRequantSeconds : 0;
      EXPECT_NEAR(r->prepareSeconds, 3 * call, 1e-12) << strategy;
      EXPECT_NEAR(r->finalizeSeconds, post + closing * call, 1e-9) << strategy;
      EXPECT_GT(r->transferSeconds, 0) << strategy;
      EXPECT_NEAR(r->prepareSeconds + r->transferSeconds + r->finalizeSeconds, r->seconds, 1e-9)
          << strategy;
      EXPECT_EQ(r->spanSeconds(""), r->seconds);
      EXPECT_EQ(r->spanSeconds("prepare"), r->prepareSeconds);
      EXPECT_EQ(r->spanSeconds("transfer"), r->transferSeconds);
      EXPECT_EQ(r->spanSeconds("finalize"), r->finalizeSeconds);
    }
  }
  auto a = simulate(sc, "miles-p2p");
  auto b = simulate(first, "miles-p2p");
  ASSERT_TRUE(a.isOk() && b.isOk());
  EXPECT_GT(b->registrationSeconds, 0);
  EXPECT_NEAR(b->prepareSeconds - a->prepareSeconds, b->registrationSeconds, 1e-6);
  EXPECT_NEAR(b->transferSeconds, a->transferSeconds, 1e-6);
}

TEST(Strategy, CriticalPathAddsUpToTheUpdate) {
  // The per-stage critical-path shares partition the update time; in
  // broadcast the engines' one-request-at-a-time chain carries most of it.
  Scenario sc = load(scenarioText("engines=2,tp=8,ep=8", 2));
  for (const char* strategy : {"miles-broadcast", "miles-p2p"}) {
    auto r = simulate(sc, strategy);
    ASSERT_TRUE(r.isOk());
    double sum = 0, engines = 0;
    for (const auto& st : r->stages) {
      // The time a polled lock sits free is on the path but is no task's.
      if (st.name != "lock_poll") {
        EXPECT_LE(st.critical, st.busy + 1e-9) << strategy << " " << st.name;
      }
      sum += st.critical;
      if (st.name == "engine_call" || st.name == "broadcast" || st.name == "engine_load") {
        engines += st.critical;
      }
    }
    EXPECT_NEAR(sum, r->seconds, 1e-9 * r->seconds) << strategy;
    if (std::string(strategy) == "miles-broadcast") {
      EXPECT_GT(engines, 0.5 * r->seconds);
    }
  }
}

TEST(LoaderScan, StepsFollowTheExpertMapping) {
  workloads::TensorSpec t;
  t.kind = workloads::TensorKind::kRoutedExpert;
  t.expert = 0;
  t.name = "model.layers.3.mlp.experts.0.gate_proj.weight";
  EXPECT_DOUBLE_EQ(loaderScanSteps(t, 128), kStackedEntries + 1);
  t.expert = 10;
  t.name = "model.layers.3.mlp.experts.10.down_proj.weight";
  EXPECT_DOUBLE_EQ(loaderScanSteps(t, 128), kStackedEntries + 30 + 2);
  t.name = "model.layers.3.mlp.experts.10.up_proj.weight";
  EXPECT_DOUBLE_EQ(loaderScanSteps(t, 128), kStackedEntries + 30 + 3);
  t = {};
  t.kind = workloads::TensorKind::kAttention;
  t.name = "model.layers.3.self_attn.o_proj.weight";  // walks the whole mapping
  EXPECT_DOUBLE_EQ(loaderScanSteps(t, 128), kStackedEntries + 3 * 128);
  EXPECT_DOUBLE_EQ(loaderScanSteps(t, 0), kStackedEntries);  // dense model
  t.name = "model.layers.3.self_attn.q_proj.weight";         // a stacked parameter
  EXPECT_DOUBLE_EQ(loaderScanSteps(t, 128), kStackedEntries);
}

TEST(LoaderScan, TheP2pMapperWalksTheExpertsFirst) {
  workloads::TensorSpec t;
  t.kind = workloads::TensorKind::kRoutedExpert;
  t.expert = 10;
  t.name = "model.layers.3.mlp.experts.10.down_proj.weight";
  EXPECT_DOUBLE_EQ(mapperScanSteps(t, 128), 30 + 2);
  t = {};
  t.kind = workloads::TensorKind::kAttention;
  t.name = "model.layers.3.self_attn.q_proj.weight";  // stacked, but tested after the experts
  EXPECT_DOUBLE_EQ(mapperScanSteps(t, 128), 3 * 128 + kStackedEntries);
  EXPECT_DOUBLE_EQ(mapperScanSteps(t, 0), kStackedEntries);
}

}  // namespace
}  // namespace tide::sim

namespace tide::sim {
namespace {

TEST(Sweep, ComparesTheScenariosTwoStrategiesAtEveryPoint) {
  Scenario sc = load(scenarioText("engines=2,tp=8,ep=8", 2));
  SweepAxes axes;
  axes.inferEp = {8, 16};
  auto pts =
      runSweep(sc, axes, [](const Scenario& s, std::string_view n) { return simulate(s, n); });
  ASSERT_TRUE(pts.isOk()) << pts.status().toString();
  ASSERT_EQ(pts->size(), 2u);
  for (const auto& p : *pts) {
    EXPECT_GT(p.broadcastSeconds, 0);
    EXPECT_GT(p.p2pSeconds, 0);
  }
  // The first point is the scenario itself: the same figures as tide sim's.
  EXPECT_DOUBLE_EQ((*pts)[0].broadcastSeconds, simulate(sc, "miles-broadcast")->seconds);
  EXPECT_DOUBLE_EQ((*pts)[0].p2pSeconds, simulate(sc, "miles-p2p")->seconds);
  sc.strategy.names = {"miles-p2p"};
  auto one =
      runSweep(sc, axes, [](const Scenario& s, std::string_view n) { return simulate(s, n); });
  ASSERT_FALSE(one.isOk());
  EXPECT_NE(one.status().message().find("two strategies"), std::string::npos);
}

}  // namespace
}  // namespace tide::sim
