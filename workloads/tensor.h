#pragma once
// Tensor inventory: every weight tensor of a model with its logical shape,
// dtypes, position (layer, expert), kind and how it splits under parallelism.

#include <cstdint>
#include <string>
#include <vector>

#include "workloads/dtype.h"

namespace tide::workloads {

enum class TensorKind : uint8_t {
  kEmbedding,
  kAttention,  // q/k/v/o and MLA projections (q_a, q_b, kv_a, kv_b, o) incl. biases
  kNorm,       // RMSNorm weights (layer norms, q/k norms, MLA latent norms, final norm)
  kRouter,     // MoE gate weight and its score-correction bias
  kDenseMlp,
  kSharedExpert,
  kRoutedExpert,
  kLmHead,
};

// How a tensor splits over tensor-parallel ranks (Megatron / SGLang naming).
enum class TpSplit : uint8_t {
  kReplicated,
  kColumn,  // split dim 0 (output features; vocab for embedding / lm_head)
  kRow,     // split dim 1 (input features)
};

const char* kindName(TensorKind k);  // "embedding", "attention", ...
const char* tpSplitName(TpSplit s);  // "replicated", "column", "row"

struct TensorSpec {
  std::string name;  // Hugging Face style, e.g. model.layers.3.mlp.experts.7.up_proj.weight
  std::vector<uint64_t> shape;  // logical (unsharded) shape, row-major
  DType trainDtype = DType::kBF16;
  DType inferDtype = DType::kBF16;
  uint32_t fp8Block = 0;  // block-scale tile edge when inferDtype is FP8 (e.g. 128); 0 otherwise
  int layer = -1;         // -1: not in a decoder layer (embedding, final norm, lm_head)
  int expert = -1;        // routed expert id, -1 if none
  TensorKind kind = TensorKind::kNorm;
  TpSplit tp = TpSplit::kReplicated;
  // Granularity of the TP-split dimension: the split never cuts a unit (a head
  // of head_dim rows for per-head projections; 1 otherwise). When the dim has
  // fewer units than TP ranks (GQA k/v with tp > kv heads), units are
  // replicated: rank r owns unit r / (tp / units).
  uint64_t tpUnit = 1;
  // Inference with DP-attention: the tensor is split only over the ranks of
  // one DP-attention group and replicated across groups (attention weights).
  bool dpAttnReplicated = false;

  uint64_t numel() const;
  uint64_t trainBytes() const { return numel() * bytesOf(trainDtype); }
  // Inference bytes incl. FP8 block scales (one fp32 per fp8Block x fp8Block tile).
  uint64_t inferBytes() const;
};

struct ModelInventory {
  std::string name;
  std::vector<TensorSpec> tensors;
  int layers = 0;
  int experts = 0;  // routed experts per MoE layer (0 for dense models)

  uint64_t totalParams() const;
  // All tensors in training (false) or inference (true) dtypes.
  uint64_t bytes(bool inference) const;
  // Parameters of tensors of one kind.
  uint64_t paramsOfKind(TensorKind k) const;
  // Index of a tensor by name, or -1.
  int64_t find(const std::string& name) const;
};

}  // namespace tide::workloads
