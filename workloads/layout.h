#pragma once
// Parallel layouts of the trainer and the inference engines, and which box of
// which tensor each rank owns.
//
// Training rank order (Megatron-Core "tp-cp-dp-pp"): tp fastest, then cp,
// then dp, then pp:  rank = tp + TP*(cp + CP*(dp + DP*pp)).
// Experts fold onto the same ranks of a pipeline stage (Megatron's MoE
// folding): with l = rank mod (TP*CP*DP), etp = l mod ETP,
// ep = (l / ETP) mod EP, edp = l / (ETP*EP).
//
// Training ownership:
//  * non-expert tensors live on the stage that holds their layer (embedding
//    on the first stage, final norm and lm_head on the last); split by TP
//    (column = dim 0, row = dim 1), replicated over CP and DP;
//  * routed expert e lives on ep rank e / (E/EP); split by ETP inside the
//    expert (gate/up column, down row), replicated over EDP.
//
// Inference rank order: rank = engine*TP + local. Each engine is an SGLang-like
// server with TP ranks, EP and DP-attention:
//  * attention tensors (dpAttnReplicated): DP-attention group g = local /
//    (TP/DP), split over its TP/DP ranks, replicated across groups (SGLang
//    sets attention TP size = TP / DP when DP-attention is on);
//  * routed experts split by EP over the engine: ep rank = local / (TP/EP),
//    each expert further split over MoE-TP = TP/EP (rank local mod (TP/EP));
//  * embedding: TP-split over the whole engine, but replicated on every rank
//    with DP-attention (dp_attn > 1; SGLang builds it with enable_tp = not
//    DP-attention);
//  * lm_head: TP-split over the engine, or over the DP-attention group with
//    dp_lm_head=1 (--enable-dp-lm-head);
//  * dense MLP: TP-split over the engine, or replicated with dense_tp=1
//    (--moe-dense-tp-size 1);
//  * shared experts: TP-split over the whole engine;
//  * norms and router: replicated.
// Every engine holds a full copy of the model.

#include <string>
#include <string_view>
#include <vector>

#include "engine/core/status.h"
#include "workloads/box.h"
#include "workloads/model.h"
#include "workloads/tensor.h"

namespace tide::workloads {

struct TrainLayout {
  int tp = 1, pp = 1, cp = 1, ep = 1, etp = 1, dp = 1;
  // FSDP / HSDP: a rank's slice of each parameter (after TP or ETP) is
  // sharded again, along dim 0 in chunks of ceil(n/fsdp) (FSDP2's Shard(0)),
  // over `fsdp` ranks of its data-parallel group, and replicated over the
  // dp/fsdp such groups (HSDP when fsdp < dp, FSDP when fsdp = dp). Non-expert
  // tensors shard over fsdp consecutive dp coordinates; routed experts over
  // min(fsdp, edp) consecutive expert-DP coordinates. 1 = no sharding
  // (Megatron's replicated data parallelism).
  int fsdp = 1;
  // Decoder layers per pipeline stage; empty = default split: every stage but
  // the last gets ceil(L/PP), the last gets the rest (61 layers, PP8 ->
  // 8,8,8,8,8,8,8,5).
  std::vector<int> stageLayers;

  int worldSize() const { return tp * pp * cp * dp; }
  int edp() const { return (tp * cp * dp) / (etp * ep); }
  // The FSDP shard group of a routed expert's slice: min(fsdp, edp).
  int expertFsdp() const { return fsdp < edp() ? fsdp : edp(); }
  std::string toString() const;
};

struct InferLayout {
  int engines = 1, tp = 1, ep = 1, dpAttn = 1;
  bool dpLmHead = false;    // lm_head split over the DP-attention group
  bool denseWhole = false;  // dense_tp=1: the dense layers' MLP whole on every rank

  int worldSize() const { return engines * tp; }
  int attnTp() const { return tp / dpAttn; }
  int moeTp() const { return tp / ep; }
  std::string toString() const;
};

// How an inference engine splits a tensor: `size` ranks each hold 1/size of
// it (1 = whole on every rank), the group of that split named for errors.
struct InferSplit {
  int size = 1;
  const char* group = "tp";
};
InferSplit inferSplit(const TensorSpec& t, const InferLayout& l);
// The fraction of a tensor one inference rank holds, averaged over the
// engine's ranks (a routed expert: E/EP experts per rank over E, each split
// over TP/EP).
double inferFraction(const TensorSpec& t, const InferLayout& l);

struct TrainCoord {
  int tp = 0, cp = 0, dp = 0, pp = 0;  // dense coordinates
  int etp = 0, ep = 0, edp = 0;        // expert coordinates
};

struct InferCoord {
  int engine = 0, local = 0;  // rank = engine*TP + local
  int ep = 0;                 // expert-parallel rank
};

// "tp=8,pp=8,cp=4,ep=32[,etp=1][,dp=1][,fsdp=1][,stages=8:8:8:8:8:8:8:5]"; missing
// keys are 1.
Result<TrainLayout> parseTrainLayout(std::string_view text);
// "engines=8,tp=32,ep=32,dp_attn=8[,dp_lm_head=1][,dense_tp=1]"; missing keys
// are 1 (dp_lm_head: 0, dense_tp: the engine's tp).
Result<InferLayout> parseInferLayout(std::string_view text);

// Rejects with the reason: EP not dividing experts, TP not dividing heads or
// split dims, ETP*EP not dividing TP*CP*DP, stage layers not summing to L, ...
// worldSize > 0 also checks ranks == worldSize (e.g. nodes * GPUs).
Status validate(const TrainLayout& l, const ModelSpec& m, int worldSize = 0);
Status validate(const InferLayout& l, const ModelSpec& m, int worldSize = 0);

// Layers [first, first+count) of a pipeline stage (after defaults).
std::vector<int> stageLayerCounts(const TrainLayout& l, int layers);
int stageOfLayer(const TrainLayout& l, int layers, int layer);

TrainCoord trainCoord(const TrainLayout& l, int rank);
InferCoord inferCoord(const InferLayout& l, int rank);

struct Shard {
  uint32_t tensor = 0;  // index into ModelInventory::tensors
  Box box;              // the part of the tensor's logical shape this rank owns
  bool operator==(const Shard& o) const = default;
};

// Everything one rank holds, in inventory order. Layouts must be validated.
std::vector<Shard> trainShards(const ModelInventory& inv, const TrainLayout& l, int trainRank);
std::vector<Shard> inferShards(const ModelInventory& inv, const InferLayout& l, int inferRank);

// The TP slice of one tensor for a rank of a group of `size` (column / row /
// replicated, honouring tpUnit).
Box tpSlice(const TensorSpec& t, int rank, int size);

}  // namespace tide::workloads
