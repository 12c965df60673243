#include "engine/sync/miles/miles_update.h"

#include <algorithm>
#include <limits>

#include "engine/plan/fp8_pass.h"

namespace tide::sync::miles {

namespace {

// Eager tensor operations per checkpoint tensor in the per-tensor passes.
// Conversion: rename and split/concatenate (2), plus, only when FP8 goes on
// the wire, block quantization: the framework's H100 path allocates the FP8
// output and the scales and launches one Triton kernel per tensor (3; a
// Triton launch from Python costs about one eager op, docs/sources.md); a
// bf16 update sends the converted tensors as they are. A loader makes one
// call per tensor.
constexpr double kConvertOps = 2;
constexpr double kQuantizeOps = 3;
constexpr double kLoaderCallOps = 1;
// Device copies after a gather, per gathered byte. PyTorch's NCCL all-gather
// into a list of tensors (the EP gather of experts) gathers into one flat
// buffer and copies every slice out; a TP-gathered tensor (all_gather_param)
// is concatenated once more, also at TP 1 (a one-element gather and cat).
// A copy reads and writes each byte.
constexpr double kExpertGatherCopies = 1;
constexpr double kDenseGatherCopies = 2;
// Control rounds that open an update (the framework's update_weights): pause
// generation, flush the cache, open the update session.
constexpr double kStartRounds = 3;

}  // namespace

BucketStages gatherStages(plan::StepGraph& g) {
  BucketStages st;
  st.gather = g.stage("allgather");
  st.copy = g.stage("gather_copy");
  st.issue = g.stage("gather_issue");
  st.convert = g.stage("convert_host");
  st.quant = g.stage("quantize");
  return st;
}

plan::Step sizedStep(plan::StepKind kind, uint32_t rank, double bytes, uint16_t stage) {
  plan::Step s;
  s.kind = kind;
  s.rank = rank;
  s.bytes = bytes;
  s.stage = stage;
  return s;
}

BucketShare bucketShare(const StageBytes& sb, int nb) {
  return {sb.tensors / nb, sb.quantTensors / nb, sb.units / nb};
}

// Experts: the names are exchanged first (an object all-gather: two
// collectives, then a buffer and a host copy per EP rank), then each local
// unit is gathered into EP freshly allocated outputs (EP allocations and one
// collective). Non-expert weights: each is gathered over TP on its own (TP
// allocations, one collective, one concatenation). `k` real buckets make one
// step bucket.
double gatherOps(const Ctx& x, double unitsInBucket) {
  if (!x.expertPhase) return unitsInBucket * (x.tl.tp + 2);
  return (2 + 2.0 * x.tl.ep) * x.k + unitsInBucket * (x.tl.ep + 1);
}

double loaderOps(double tensors, double kept, double copyOps) {
  return tensors * kLoaderCallOps + kept * copyOps;
}

StepId hostOps(Ctx& x, uint32_t rank, double ops, double loopSteps, uint16_t stage) {
  plan::Step s;
  s.kind = plan::StepKind::kHostOps;
  s.rank = rank;
  s.count = ops;
  s.loopSteps = loopSteps;
  s.stage = stage;
  return x.g.add(s);
}

StepId allGather(Ctx& x, const std::vector<uint32_t>& members, double bytesOut, StepId after,
                 uint16_t stage) {
  plan::Step s;
  s.kind = plan::StepKind::kAllGather;
  s.group = x.g.group(members);
  s.rank = members.empty() ? 0 : members[0];
  s.bytes = bytesOut;
  s.lanes = static_cast<uint16_t>(x.channels);
  s.count = x.k;
  s.stage = stage;
  StepId id = x.g.add(s);
  x.g.dep(after, id);
  return id;
}

StepId chainBroadcast(Ctx& x, uint32_t root, const std::vector<uint32_t>& receivers, double bytes,
                      StepId after, uint16_t stage) {
  plan::Step s;
  s.kind = plan::StepKind::kBroadcast;
  s.rank = root;
  s.group = x.g.group(receivers);
  s.bytes = bytes;
  s.lanes = static_cast<uint16_t>(x.channels);
  s.chunkBytes = static_cast<double>(x.o.chunkBytes);
  s.count = x.k;
  s.stage = stage;
  StepId id = x.g.add(s);
  x.g.dep(after, id);
  return id;
}

namespace {

// A pass of `bytes` through `rank`'s device memory after `after`.
StepId devicePass(Ctx& x, uint32_t rank, double bytes, StepId after, uint16_t stage) {
  StepId id = x.g.add(sizedStep(plan::StepKind::kDevicePass, rank, bytes, stage));
  x.g.dep(after, id);
  return id;
}

// The device copies after a bucket's gathers.
StepId gatherCopy(Ctx& x, uint32_t rank, double bucket, StepId after, uint16_t stage) {
  if (bucket <= 0) return after;
  double bytes = 2 * bucket * (x.expertPhase ? kExpertGatherCopies : kDenseGatherCopies);
  return devicePass(x, rank, bytes, after, stage);
}

// FP8 quantization of `bytes` (BF16, only the tensors that are quantized):
// one kernel pass through the GPU's memory (fp8_pass.h); a bf16 update has
// none, and `after` itself is returned.
StepId quantize(Ctx& x, uint32_t rank, double bytes, StepId after, uint16_t stage) {
  if (!x.o.fp8Wire) return after;
  double block = x.pr.model ? x.pr.model->fp8Block : 0;
  return devicePass(x, rank, plan::fp8PassBytes(bytes, block), after, stage);
}

}  // namespace

// The host issues the gathers (`book`), then converts the bucket while the
// GPU gathers and copies it: CUDA runs kernels asynchronously, and conversion
// only queues work behind the gathers (views, a split, the quantization
// launches). The quantization runs once both are done, over `quantBytes`.
Converted convertBucket(Ctx& x, uint32_t rank, double bucket, double quantBytes,
                        const BucketShare& share, StepId book, StepId gathered, BucketStages st) {
  StepId conv = hostOps(x, rank, share.tensors * kConvertOps + share.quantTensors * kQuantizeOps, 0,
                        st.convert);
  x.g.dep(book, conv);
  StepId ready = x.g.join();
  x.g.dep(conv, ready);
  x.g.dep(gatherCopy(x, rank, bucket, gathered, st.copy), ready);
  return {conv, quantize(x, rank, quantBytes, ready, st.quant)};
}

int realBuckets(const StageBytes& sb) {
  return std::max(1, static_cast<int>(sb.buckets));
}

namespace {

double mergeFactor(const Ctx& x, int real) {
  return static_cast<double>(real) / std::min(real, x.maxBuckets);
}

}  // namespace

int stageBuckets(Ctx& x, const StageBytes& sb) {
  int real = realBuckets(sb);
  x.k = mergeFactor(x, real);
  return std::min(real, x.maxBuckets);
}

std::vector<uint32_t> epGroup(const workloads::TrainLayout& l, int pp) {
  int per = l.tp * l.cp * l.dp;
  std::vector<uint32_t> v;
  for (int e = 0; e < l.ep; ++e) v.push_back(static_cast<uint32_t>(pp * per + l.etp * e));
  return v;
}

std::vector<uint32_t> tpGroup(const workloads::TrainLayout& l, int pp) {
  int per = l.tp * l.cp * l.dp;
  std::vector<uint32_t> v;
  for (int t = 0; t < l.tp; ++t) v.push_back(static_cast<uint32_t>(pp * per + t));
  return v;
}

// Every inference rank re-quantizes the MLA layers of a model served in
// FP8 (the profile's mla_requant per layer); a broadcast engine does it
// inside the call that loads a layer's kv_b_proj, which is as serial.
StepId finish(Ctx& x, StepId allDone, double endRounds) {
  const auto& m = *x.pr.model;
  uint16_t post = x.g.stage(plan::kStagePostprocess);
  uint16_t resume = x.g.stage(plan::kStageRounds);
  StepId postJoin = x.g.join();
  bool requant =
      m.attention == workloads::AttentionType::kMla && m.inferDtype == workloads::DType::kFP8E4M3;
  double layers = requant ? m.layers : 0;
  for (int i = 0; i < x.il.worldSize(); ++i) {
    StepId p = x.g.add(plan::StepKind::kPostprocess, x.inferBase + i, layers, post);
    x.g.dep(allDone, p);
    x.g.dep(p, postJoin);
  }
  StepId r = x.g.add(plan::StepKind::kControlRound, x.inferBase, endRounds, resume);
  x.g.dep(postJoin, r);
  return r;
}

Result<plan::TransferPlan> beginPlan(const SyncProblem& pr, std::string_view strategy,
                                     ModelShares& shares, bool fsdpLayouts) {
  if (!pr.base || !pr.model || !pr.train || !pr.infer || !pr.cluster)
    return TIDE_ERROR(Code::kInvalidArgument,
                      std::string(strategy) + ": needs the model, both layouts and the cluster");
  const size_t want = static_cast<size_t>(pr.train->worldSize()) + pr.infer->worldSize();
  if (pr.base->ranks.size() != want)
    return TIDE_ERROR(Code::kInvalidArgument, std::string(strategy) + ": the base plan has " +
                                                  std::to_string(pr.base->ranks.size()) +
                                                  " ranks, the layouts " + std::to_string(want));
  if (pr.train->fsdp > 1 && !fsdpLayouts)
    return TIDE_ERROR(Code::kInvalidArgument,
                      std::string(strategy) +
                          " models Megatron's replicated data parallelism; a layout sharded by "
                          "FSDP (fsdp=" +
                          std::to_string(pr.train->fsdp) + ") is not modelled");
  if (pr.options.fp8Wire && pr.model->inferDtype != workloads::DType::kFP8E4M3)
    return TIDE_ERROR(Code::kInvalidArgument,
                      std::string(strategy) + ": fp8 on the wire but the model serves bf16");
  if (pr.options.maxStepBuckets <= 0 || pr.options.bucketBytes == 0 || pr.options.pageBytes == 0)
    return TIDE_ERROR(Code::kInvalidArgument,
                      std::string(strategy) + ": bucket, page and step buckets must be > 0");
  shares = computeShares(*pr.model, *pr.train, *pr.infer, pr.options.fp8Wire,
                         static_cast<double>(pr.options.bucketBytes));
  plan::TransferPlan p;
  p.strategy = std::string(strategy);
  p.ranks = pr.base->ranks;
  p.params.options = pr.options;
  p.work.wireBytes = shares.wireTotal;
  return p;
}

Ctx makeCtx(const SyncProblem& pr, const ModelShares& shares, plan::TransferPlan& p, bool exact) {
  Ctx x{pr, *pr.train, *pr.infer, pr.options, shares, p.work};
  x.channels = pr.options.channels > 0 ? pr.options.channels : pr.cluster->nicsPerNode;
  x.maxBuckets = exact ? std::numeric_limits<int>::max() : pr.options.maxStepBuckets;
  x.inferBase = static_cast<uint32_t>(pr.train->worldSize());
  uint32_t perStage = 0;
  for (int s = 0; s < x.tl.pp; ++s) {
    int real = 0;
    for (const auto& phase : shares.phases) {
      if (phase[s].train <= 0) continue;
      int r = realBuckets(phase[s]);
      real += r;
      p.work.mergeFactor = std::max(p.work.mergeFactor, mergeFactor(x, r));
    }
    perStage = std::max(perStage, static_cast<uint32_t>(real));
  }
  p.work.bucketsPerStage = perStage;
  return x;
}

StepId openRounds(Ctx& x) {
  return x.g.add(plan::StepKind::kControlRound, x.inferBase, kStartRounds,
                 x.g.stage(plan::kStageRounds));
}

}  // namespace tide::sync::miles
