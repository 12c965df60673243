// The list of strategies; add new ones here (docs/adding-a-strategy.md).

#include "engine/sync/strategy_registry.h"

#include "engine/sync/broadcast_strategy.h"
#include "engine/sync/designs/design_strategies.h"
#include "engine/sync/miles/miles_strategies.h"
#include "engine/sync/p2p_rr_strategy.h"
#include "engine/sync/p2p_strategy.h"

namespace tide::sync {

namespace {

template <class S>
std::unique_ptr<Strategy> make() {
  return std::make_unique<S>();
}

// Sized: deliveries over another plan point into the table itself.
constexpr StrategyDescriptor kTable[13] = {
    {
        .name = "broadcast",
        .summary = "gather to each pipeline stage head, chain-broadcast buckets to every "
                   "inference rank",
        .profile = "tide",
        .make = make<BroadcastStrategy>,
        .relaysThroughTargets = true,
    },
    {
        .name = "p2p",
        .summary = "one-sided writes of exactly the needed regions, sources balanced over the "
                   "training ranks, from a staging replica registered once",
        .profile = "tide",
        .make = make<P2pStrategy>,
        .sparseDeltas = true,
    },
    {
        .name = "p2p-rr",
        .summary = "p2p's one-sided writes with round-robin sources instead of balanced ones "
                   "(the baseline the balanced assignment is measured against)",
        .profile = "tide",
        .make = make<P2pRoundRobinStrategy>,
    },
    {
        .name = "disk-delta",
        .summary = "p2p's plan delivered as delta files on a shared file system",
        .delivery = Delivery::kDiskDelta,
        .planner = &kTable[1],
    },
    {
        .name = "store",
        .summary = "p2p's plan delivered through snapshots in the ranks' store segments",
        .delivery = Delivery::kStore,
        .planner = &kTable[1],
    },
    {
        .name = "miles-broadcast",
        .summary = "Miles' broadcast path: stage heads gather, convert and NCCL-broadcast each "
                   "bucket to every engine rank, one engine call at a time",
        .models = "Miles + SGLang (the published runs)",
        .profile = "miles",
        .delivery = Delivery::kModel,
        .input = PlanInput::kCounts,
        .make = make<miles::MilesBroadcastStrategy>,
    },
    {
        .name = "miles-p2p",
        .summary = "Miles' p2p path: every rank gathers and converts, loads a CPU replica per "
                   "engine rank and RDMA-writes its targets (Mooncake transfer engine)",
        .models = "Miles + SGLang + Mooncake (the published runs)",
        .profile = "miles",
        .delivery = Delivery::kModel,
        .input = PlanInput::kCounts,
        .make = make<miles::MilesP2pStrategy>,
    },
    {
        .name = "nemo-rl-nccl",
        .summary = "NeMo-RL's NCCL refit: routed experts shard to shard from GPU memory (one "
                   "NCCL group per pipeline stage, two streams), non-expert weights by a packed "
                   "broadcast",
        .models = "NVIDIA NeMo-RL (Megatron training) + vLLM",
        .profile = "nemo-rl",
        .delivery = Delivery::kModel,
        .input = PlanInput::kCounts,
        .make = make<designs::NemoRlNcclStrategy>,
    },
    {
        .name = "checkpoint-engine",
        .summary = "MoonshotAI checkpoint-engine, broadcast mode: per bucket H2D from pinned "
                   "host memory on its owner, NCCL broadcast to every inference rank, CUDA-IPC "
                   "reload into the engine",
        .models = "MoonshotAI checkpoint-engine + vLLM/SGLang",
        .profile = "checkpoint-engine",
        .delivery = Delivery::kModel,
        .input = PlanInput::kCounts,
        .make = make<designs::CheckpointEngineStrategy>,
    },
    {
        .name = "checkpoint-engine-p2p",
        .summary = "MoonshotAI checkpoint-engine, P2P mode (as verl's kimi_ckpt_engine): "
                   "trainers offload and register their share, inference ranks pull buckets by "
                   "RDMA, then NCCL broadcast and CUDA-IPC reload",
        .models = "MoonshotAI checkpoint-engine (P2P, Mooncake transfer engine) under verl",
        .profile = "checkpoint-engine-p2p",
        .delivery = Delivery::kModel,
        .input = PlanInput::kCounts,
        .make = make<designs::CheckpointEngineP2pStrategy>,
    },
    {
        .name = "verl-nccl",
        .summary = "verl's NCCL checkpoint engine: trainers gather each bucket, one rank "
                   "NCCL-broadcasts double-buffered buckets to every inference rank",
        .models = "verl (checkpoint engine, nccl backend) + vLLM/SGLang",
        .profile = "verl",
        .delivery = Delivery::kModel,
        .input = PlanInput::kCounts,
        .make = make<designs::VerlNcclStrategy>,
    },
    {
        .name = "verl-nixl",
        .summary = "verl's NIXL checkpoint engine: trainers gather each bucket, trainer rank 0 "
                   "and the inference ranks pass it down a line of whole-bucket RDMA reads "
                   "(two buffers each)",
        .models = "verl (checkpoint engine, nixl backend: UCX, UCCL or Mooncake) + vLLM/SGLang",
        .profile = "verl",
        .delivery = Delivery::kModel,
        .input = PlanInput::kCounts,
        .make = make<designs::VerlNixlStrategy>,
    },
    {
        .name = "static-schedule",
        .summary = "a static schedule computed once: per-parameter full_tensor() in FSDP/HSDP "
                   "meshes, balanced senders RDMA-WRITE each receiver's slice from GPU memory, "
                   "pipelined under a memory watermark, a barrier between mesh groups",
        .models = "a static precomputed schedule (\"Weight Transfer for RL Post-Training in under "
                  "2 seconds\": FSDP training, RDMA WRITE into the engines' GPU memory)",
        .profile = "static-schedule",
        .delivery = Delivery::kModel,
        .input = PlanInput::kCounts,
        .make = make<designs::StaticScheduleStrategy>,
    },
};

// The deliveries over p2p's plan point at entry 1.
static_assert(kTable[1].name == "p2p");

}  // namespace

const char* deliveryName(Delivery d) {
  switch (d) {
    case Delivery::kWire:
      return "wire";
    case Delivery::kDiskDelta:
      return "disk-delta";
    case Delivery::kStore:
      return "store";
    case Delivery::kModel:
      return "model";
  }
  return "?";
}

Result<std::unique_ptr<Strategy>> StrategyDescriptor::planBuilder() const {
  const StrategyDescriptor* d = this;
  while (d->planner) d = d->planner;
  if (!d->make)
    return TIDE_ERROR(Code::kInternal, "strategy '" + std::string(name) + "' has no plan builder");
  return d->make();
}

std::span<const StrategyDescriptor> strategyTable() {
  return kTable;
}

std::string strategyNames(bool (*pred)(const StrategyDescriptor&)) {
  std::string out;
  for (const auto& d : kTable)
    if (!pred || pred(d)) out += (out.empty() ? "" : ", ") + std::string(d.name);
  return out;
}

Result<const StrategyDescriptor*> findStrategy(std::string_view name) {
  for (const auto& d : kTable)
    if (d.name == name) return &d;
  return TIDE_ERROR(Code::kInvalidArgument, "unknown strategy '" + std::string(name) +
                                                "' (known: " + strategyNames() + ")");
}

std::string runName(const StrategyDescriptor& d, bool sparse) {
  return std::string(d.name) + (sparse ? "-sparse" : "");
}

Result<std::unique_ptr<Strategy>> createStrategy(std::string_view name) {
  TIDE_ASSIGN_OR_RETURN(const StrategyDescriptor* d, findStrategy(name));
  return d->planBuilder();
}

}  // namespace tide::sync
