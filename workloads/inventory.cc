// buildInventory: ModelSpec -> every tensor, named as in the Hugging Face
// checkpoints (DeepSeek-V3 / Qwen3 / Llama naming).

#include <string>

#include "workloads/model.h"

namespace tide::workloads {

namespace {

class Builder {
 public:
  explicit Builder(const ModelSpec& s) : s_(s) { inv_.name = s.name; }

  void add(std::string name, std::vector<uint64_t> shape, TensorKind kind, TpSplit tp, int layer,
           int expert = -1, uint64_t unit = 1) {
    TensorSpec t;
    t.name = std::move(name);
    t.shape = std::move(shape);
    t.kind = kind;
    t.tp = tp;
    t.layer = layer;
    t.expert = expert;
    t.tpUnit = unit;
    t.dpAttnReplicated = kind == TensorKind::kAttention;
    // FP8 serving quantizes the linear layers; embeddings, lm_head, norms,
    // router and biases stay in BF16 (as in the DeepSeek-V3 / Kimi-K2 FP8 checkpoints).
    bool linear = t.shape.size() == 2 && kind != TensorKind::kEmbedding &&
                  kind != TensorKind::kLmHead && kind != TensorKind::kRouter;
    if (s_.inferDtype == DType::kFP8E4M3 && linear) {
      t.inferDtype = DType::kFP8E4M3;
      t.fp8Block = s_.fp8Block;
    } else {
      t.inferDtype = s_.inferDtype == DType::kFP8E4M3 ? DType::kBF16 : s_.inferDtype;
    }
    inv_.tensors.push_back(std::move(t));
  }

  void attention(const std::string& p, int l) {
    const uint64_t h = s_.hidden;
    if (s_.attention == AttentionType::kMla) {
      const uint64_t qk = s_.qkNopeHeadDim + s_.qkRopeHeadDim;
      if (s_.qLoraRank > 0) {
        add(p + "q_a_proj.weight", {s_.qLoraRank, h}, TensorKind::kAttention, TpSplit::kReplicated,
            l);
        add(p + "q_a_layernorm.weight", {s_.qLoraRank}, TensorKind::kNorm, TpSplit::kReplicated, l);
        add(p + "q_b_proj.weight", {s_.heads * qk, s_.qLoraRank}, TensorKind::kAttention,
            TpSplit::kColumn, l, -1, qk);
      } else {
        add(p + "q_proj.weight", {s_.heads * qk, h}, TensorKind::kAttention, TpSplit::kColumn, l,
            -1, qk);
      }
      add(p + "kv_a_proj_with_mqa.weight", {s_.kvLoraRank + s_.qkRopeHeadDim, h},
          TensorKind::kAttention, TpSplit::kReplicated, l);
      add(p + "kv_a_layernorm.weight", {s_.kvLoraRank}, TensorKind::kNorm, TpSplit::kReplicated, l);
      add(p + "kv_b_proj.weight", {s_.heads * (s_.qkNopeHeadDim + s_.vHeadDim), s_.kvLoraRank},
          TensorKind::kAttention, TpSplit::kColumn, l, -1, s_.qkNopeHeadDim + s_.vHeadDim);
      add(p + "o_proj.weight", {h, s_.heads * s_.vHeadDim}, TensorKind::kAttention, TpSplit::kRow,
          l, -1, s_.vHeadDim);
      return;
    }
    const uint64_t hd = s_.headDim;
    for (const char* n : {"q", "k", "v"}) {
      uint64_t rows = (n[0] == 'q' ? s_.heads : s_.kvHeads) * hd;
      add(p + n + "_proj.weight", {rows, h}, TensorKind::kAttention, TpSplit::kColumn, l, -1, hd);
      if (s_.attentionBias) {
        add(p + n + "_proj.bias", {rows}, TensorKind::kAttention, TpSplit::kColumn, l, -1, hd);
      }
    }
    add(p + "o_proj.weight", {h, s_.heads * hd}, TensorKind::kAttention, TpSplit::kRow, l, -1, hd);
    if (s_.qkNorm) {
      add(p + "q_norm.weight", {hd}, TensorKind::kNorm, TpSplit::kReplicated, l);
      add(p + "k_norm.weight", {hd}, TensorKind::kNorm, TpSplit::kReplicated, l);
    }
  }

  void mlp(const std::string& p, uint64_t inter, TensorKind kind, int l, int expert) {
    add(p + "gate_proj.weight", {inter, s_.hidden}, kind, TpSplit::kColumn, l, expert);
    add(p + "up_proj.weight", {inter, s_.hidden}, kind, TpSplit::kColumn, l, expert);
    add(p + "down_proj.weight", {s_.hidden, inter}, kind, TpSplit::kRow, l, expert);
  }

  ModelInventory build() {
    const uint64_t h = s_.hidden;
    inv_.layers = s_.layers;
    inv_.experts = s_.experts;
    add("model.embed_tokens.weight", {s_.vocab, h}, TensorKind::kEmbedding, TpSplit::kColumn, -1);
    for (int l = 0; l < s_.layers; ++l) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      add(p + "input_layernorm.weight", {h}, TensorKind::kNorm, TpSplit::kReplicated, l);
      attention(p + "self_attn.", l);
      add(p + "post_attention_layernorm.weight", {h}, TensorKind::kNorm, TpSplit::kReplicated, l);
      if (!s_.isMoeLayer(l)) {
        mlp(p + "mlp.", s_.denseIntermediate, TensorKind::kDenseMlp, l, -1);
        continue;
      }
      add(p + "mlp.gate.weight", {static_cast<uint64_t>(s_.experts), h}, TensorKind::kRouter,
          TpSplit::kReplicated, l);
      if (s_.routerBias) {
        add(p + "mlp.gate.e_score_correction_bias", {static_cast<uint64_t>(s_.experts)},
            TensorKind::kRouter, TpSplit::kReplicated, l);
      }
      for (int e = 0; e < s_.experts; ++e) {
        mlp(p + "mlp.experts." + std::to_string(e) + ".", s_.expertIntermediate,
            TensorKind::kRoutedExpert, l, e);
      }
      if (s_.sharedExperts > 0) {
        // The shared experts form one MLP of sharedExperts x expert width.
        mlp(p + "mlp.shared_experts.", s_.expertIntermediate * s_.sharedExperts,
            TensorKind::kSharedExpert, l, -1);
      }
    }
    add("model.norm.weight", {h}, TensorKind::kNorm, TpSplit::kReplicated, -1);
    if (!s_.tiedEmbeddings) {
      add("lm_head.weight", {s_.vocab, h}, TensorKind::kLmHead, TpSplit::kColumn, -1);
    }
    return std::move(inv_);
  }

 private:
  const ModelSpec& s_;
  ModelInventory inv_;
};

}  // namespace

ModelInventory buildInventory(const ModelSpec& spec) {
  return Builder(spec).build();
}

}  // namespace tide::workloads
