#pragma once
// Model architecture as data (workloads/models/<name>.toml) and the builder
// that turns it into a tensor inventory. Field names follow the Hugging Face
// config.json of each model; see docs/workloads.md for the TOML schema.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/status.h"
#include "workloads/dtype.h"
#include "workloads/tensor.h"

namespace tide::workloads {

enum class AttentionType : uint8_t { kGqa, kMla };

struct ModelSpec {
  std::string name;
  AttentionType attention = AttentionType::kGqa;
  int layers = 0;            // decoder layers (MTP layers excluded, see mtpLayers)
  int firstDenseLayers = 0;  // leading layers with a dense MLP instead of MoE
  uint64_t hidden = 0;
  uint64_t heads = 0;
  // GQA
  uint64_t kvHeads = 0;
  uint64_t headDim = 0;
  bool qkNorm = false;         // per-head RMSNorm on q and k (Qwen3)
  bool attentionBias = false;  // bias on q/k/v (GLM-4.5)
  // MLA (DeepSeek-V3 / Kimi-K2); qLoraRank 0 means a direct q_proj
  uint64_t qLoraRank = 0;
  uint64_t kvLoraRank = 0;
  uint64_t qkNopeHeadDim = 0;
  uint64_t qkRopeHeadDim = 0;
  uint64_t vHeadDim = 0;
  // MLP / MoE
  uint64_t denseIntermediate = 0;  // dense layers' FFN width
  int experts = 0;                 // routed experts per MoE layer; 0 = dense model
  int sharedExperts = 0;
  int topK = 0;
  uint64_t expertIntermediate = 0;
  bool routerBias = false;  // e_score_correction_bias per MoE layer (DeepSeek-V3 style)
  // Vocabulary
  uint64_t vocab = 0;
  bool tiedEmbeddings = false;
  // Not part of the inventory: multi-token-prediction layers of the checkpoint.
  int mtpLayers = 0;
  // Inference weights
  DType inferDtype = DType::kBF16;
  uint32_t fp8Block = 128;
  // Reference total from the model card, for the zoo test (0 = unknown).
  uint64_t publishedParams = 0;
  int scale = 1;  // hidden dims divided by this (see scaled())

  bool isMoe() const { return experts > 0; }
  bool isMoeLayer(int layer) const { return isMoe() && layer >= firstDenseLayers; }
  int moeLayers() const { return isMoe() ? layers - firstDenseLayers : 0; }
};

// Names of the models shipped with tide ("kimi-k2", "deepseek-v3", ...).
std::vector<std::string> zooModels();
// A zoo name, or a path to a TOML file. Rejects impossible dims with the reason.
Result<ModelSpec> loadModel(std::string_view nameOrPath);
Result<ModelSpec> parseModelToml(std::string_view tomlText, std::string_view origin);
// Structural checks: positive dims, firstDenseLayers <= layers, topK <= experts, ...
Status validateModel(const ModelSpec& spec);
// Divides every hidden dimension (hidden, head dims, ranks, intermediates,
// vocab) by S, rounding up, keeping structure: layers, heads, experts, top-k
// and the tensor count stay the same. S = 1 returns the spec unchanged.
Result<ModelSpec> scaled(const ModelSpec& spec, int s);
ModelInventory buildInventory(const ModelSpec& spec);

}  // namespace tide::workloads
