#pragma once
// Models of other teams' published weight-update designs, as plans of steps
// (engine/plan/plan_steps.h) built from each system's public code: they are
// simulated, not run (a real run needs that system and its engines).
// docs/designs.md says what each models and what it leaves out.
//
//  nemo-rl-nccl: NVIDIA NeMo-RL's refit from Megatron training to vLLM
//    engines over NCCL: per pipeline stage one NCCL group; the routed
//    experts go shard to shard, each trainer rank sending from GPU memory
//    exactly the experts each inference rank holds (two CUDA streams per
//    sender); the non-expert remainder goes by a packed broadcast from the
//    stage's first rank.
//  checkpoint-engine: MoonshotAI's checkpoint-engine in broadcast mode: the
//    weights sit in pinned host memory on the inference nodes, sharded over
//    the inference ranks; round by round every rank stages a bucket on its
//    GPU (H2D), then owner by owner the bucket is copied into a buffer
//    shared with the engine (CUDA IPC), NCCL-broadcast to every inference
//    rank, and reloaded by each engine while the next one is broadcast.
//  checkpoint-engine-p2p: its P2P mode as verl's kimi_ckpt_engine drives
//    it: the training ranks offload their share of the checkpoint to host
//    memory and register it with the transfer engine; each bucket is pulled
//    by RDMA from its owner into an inference rank's GPU instead of the H2D
//    copy, then broadcast as above.
//  verl-nccl: verl's NCCL checkpoint engine: the training ranks all-gather
//    each bucket of full tensors (FSDP), one rank packs it into one of two
//    device buffers and NCCL-broadcasts it to every inference rank (metadata
//    over a message queue, not on the wire's critical path), the engines
//    load it; packing bucket b+1 overlaps broadcasting bucket b.
//  verl-nixl: verl's NIXL checkpoint engine (its UCX, UCCL or Mooncake
//    backends alike): the same gather and packing, then instead of the
//    broadcast a line of agents, trainer rank 0 then every inference rank,
//    each reading the whole bucket from the one before (two buffers each).
//  static-schedule: the design of "Weight Transfer for RL Post-Training in
//    under 2 seconds": FSDP/HSDP training; a routing table computed once
//    names, per parameter and inference rank, the training rank that writes
//    it; per parameter every member of its DeviceMesh runs full_tensor(),
//    the chosen senders fuse and quantize, and RDMA-WRITE each receiver's
//    slice straight into its GPU memory (NVLink within a node), pipelined
//    under a per-GPU memory watermark; a global barrier between mesh groups.

#include "engine/sync/strategy.h"

namespace tide::sync::designs {

class NemoRlNcclStrategy final : public Strategy {
 public:
  std::string_view name() const override { return "nemo-rl-nccl"; }
  std::string_view description() const override {
    return "NeMo-RL's NCCL refit: routed experts shard to shard from GPU memory, one NCCL "
           "group per pipeline stage, non-expert weights by a packed broadcast";
  }
  Result<plan::TransferPlan> makePlan(const SyncProblem& problem) const override;
};

class CheckpointEngineStrategy final : public Strategy {
 public:
  std::string_view name() const override { return "checkpoint-engine"; }
  std::string_view description() const override {
    return "MoonshotAI checkpoint-engine (broadcast mode): per bucket H2D from pinned host "
           "memory on the owner, NCCL broadcast to every inference rank, CUDA-IPC reload";
  }
  Result<plan::TransferPlan> makePlan(const SyncProblem& problem) const override;
};

class CheckpointEngineP2pStrategy final : public Strategy {
 public:
  std::string_view name() const override { return "checkpoint-engine-p2p"; }
  std::string_view description() const override {
    return "MoonshotAI checkpoint-engine (P2P mode, as verl's kimi_ckpt_engine): trainers "
           "offload and register their share, each inference rank pulls its buckets by RDMA, "
           "then the broadcast mode's NCCL broadcast and reload";
  }
  Result<plan::TransferPlan> makePlan(const SyncProblem& problem) const override;
};

class VerlNcclStrategy final : public Strategy {
 public:
  std::string_view name() const override { return "verl-nccl"; }
  std::string_view description() const override {
    return "verl's NCCL checkpoint engine: trainers all-gather each bucket, one rank "
           "broadcasts double-buffered buckets to every inference rank";
  }
  Result<plan::TransferPlan> makePlan(const SyncProblem& problem) const override;
};

class VerlNixlStrategy final : public Strategy {
 public:
  std::string_view name() const override { return "verl-nixl"; }
  std::string_view description() const override {
    return "verl's NIXL checkpoint engine: trainers all-gather each bucket, then trainer rank 0 "
           "and the inference ranks pass it down a line of whole-bucket RDMA reads, two "
           "buffers each";
  }
  Result<plan::TransferPlan> makePlan(const SyncProblem& problem) const override;
};

class StaticScheduleStrategy final : public Strategy {
 public:
  std::string_view name() const override { return "static-schedule"; }
  std::string_view description() const override {
    return "static precomputed schedule: per-parameter full_tensor() in FSDP/HSDP meshes, "
           "routed senders RDMA-WRITE each receiver's slice from GPU memory, pipelined under a "
           "memory watermark";
  }
  Result<plan::TransferPlan> makePlan(const SyncProblem& problem) const override;
};

}  // namespace tide::sync::designs
