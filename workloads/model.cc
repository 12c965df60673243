#include "workloads/model.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "workloads/embedded.h"
#include "workloads/toml_fields.h"

namespace tide::workloads {

namespace {

constexpr uint64_t kMaxDim = 1ull << 24;
constexpr int kMaxLayers = 4096;
constexpr int kMaxExperts = 1 << 16;
constexpr uint64_t kMaxParams = 1ull << 52;

Status bad(const ModelSpec& s, const std::string& what) {
  return TIDE_ERROR(Code::kInvalidArgument, "model '" + s.name + "': " + what);
}

}  // namespace

std::vector<std::string> zooModels() {
  std::vector<std::string> names;
  for (size_t i = 0; i < detail::kEmbeddedModelCount; ++i) {
    names.emplace_back(detail::kEmbeddedModels[i].name);
  }
  return names;
}

Result<ModelSpec> parseModelToml(std::string_view text, std::string_view origin) {
  TIDE_ASSIGN_OR_RETURN(toml::table t, detail::parseToml(text, origin));
  detail::TomlFields f(t, std::string(origin));
  ModelSpec s;
  std::string attention = "gqa", infer = "bf16";
  TIDE_RETURN_IF_ERROR(f.getString("name", s.name, true));
  TIDE_RETURN_IF_ERROR(f.getString("attention", attention, true));
  TIDE_RETURN_IF_ERROR(f.getInt("layers", s.layers, kMaxLayers, true));
  TIDE_RETURN_IF_ERROR(f.getInt("first_dense_layers", s.firstDenseLayers, kMaxLayers, false));
  TIDE_RETURN_IF_ERROR(f.getU64("hidden", s.hidden, kMaxDim, true));
  TIDE_RETURN_IF_ERROR(f.getU64("heads", s.heads, kMaxDim, true));
  TIDE_RETURN_IF_ERROR(f.getU64("kv_heads", s.kvHeads, kMaxDim, false));
  TIDE_RETURN_IF_ERROR(f.getU64("head_dim", s.headDim, kMaxDim, false));
  TIDE_RETURN_IF_ERROR(f.getBool("qk_norm", s.qkNorm));
  TIDE_RETURN_IF_ERROR(f.getBool("attention_bias", s.attentionBias));
  TIDE_RETURN_IF_ERROR(f.getU64("q_lora_rank", s.qLoraRank, kMaxDim, false));
  TIDE_RETURN_IF_ERROR(f.getU64("kv_lora_rank", s.kvLoraRank, kMaxDim, false));
  TIDE_RETURN_IF_ERROR(f.getU64("qk_nope_head_dim", s.qkNopeHeadDim, kMaxDim, false));
  TIDE_RETURN_IF_ERROR(f.getU64("qk_rope_head_dim", s.qkRopeHeadDim, kMaxDim, false));
  TIDE_RETURN_IF_ERROR(f.getU64("v_head_dim", s.vHeadDim, kMaxDim, false));
  TIDE_RETURN_IF_ERROR(f.getU64("dense_intermediate", s.denseIntermediate, kMaxDim, false));
  TIDE_RETURN_IF_ERROR(f.getInt("experts", s.experts, kMaxExperts, false));
  TIDE_RETURN_IF_ERROR(f.getInt("shared_experts", s.sharedExperts, kMaxExperts, false));
  TIDE_RETURN_IF_ERROR(f.getInt("top_k", s.topK, kMaxExperts, false));
  TIDE_RETURN_IF_ERROR(f.getU64("expert_intermediate", s.expertIntermediate, kMaxDim, false));
  TIDE_RETURN_IF_ERROR(f.getBool("router_bias", s.routerBias));
  TIDE_RETURN_IF_ERROR(f.getU64("vocab", s.vocab, kMaxDim, true));
  TIDE_RETURN_IF_ERROR(f.getBool("tied_embeddings", s.tiedEmbeddings));
  TIDE_RETURN_IF_ERROR(f.getInt("mtp_layers", s.mtpLayers, kMaxLayers, false));
  TIDE_RETURN_IF_ERROR(f.getString("infer_dtype", infer, false));
  uint64_t block = s.fp8Block;
  TIDE_RETURN_IF_ERROR(f.getU64("fp8_block", block, 4096, false));
  s.fp8Block = static_cast<uint32_t>(block);
  TIDE_RETURN_IF_ERROR(f.getU64("published_params", s.publishedParams, kMaxParams, false));
  TIDE_RETURN_IF_ERROR(f.rejectUnknown());
  if (attention == "mla") {
    s.attention = AttentionType::kMla;
  } else if (attention == "gqa") {
    s.attention = AttentionType::kGqa;
  } else {
    return f.error("attention", "must be \"mla\" or \"gqa\" (got \"" + attention + "\")");
  }
  TIDE_ASSIGN_OR_RETURN(s.inferDtype, parseDType(infer));
  TIDE_RETURN_IF_ERROR(validateModel(s).withContext(std::string(origin)));
  return s;
}

Status validateModel(const ModelSpec& s) {
  if (s.name.empty()) return bad(s, "name is empty");
  if (s.layers <= 0) return bad(s, "layers must be > 0");
  if (s.hidden == 0) return bad(s, "hidden must be > 0");
  if (s.heads == 0) return bad(s, "heads must be > 0");
  if (s.vocab == 0) return bad(s, "vocab must be > 0");
  if (s.firstDenseLayers > s.layers) {
    return bad(s, "first_dense_layers (" + std::to_string(s.firstDenseLayers) + ") > layers (" +
                      std::to_string(s.layers) + ")");
  }
  if (s.attention == AttentionType::kMla) {
    if (s.kvLoraRank == 0 || s.qkNopeHeadDim == 0 || s.qkRopeHeadDim == 0 || s.vHeadDim == 0) {
      return bad(s, "MLA needs kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim > 0");
    }
  } else {
    if (s.kvHeads == 0 || s.headDim == 0) return bad(s, "GQA needs kv_heads and head_dim > 0");
    if (s.heads % s.kvHeads != 0) {
      return bad(s, "heads (" + std::to_string(s.heads) + ") not a multiple of kv_heads (" +
                        std::to_string(s.kvHeads) + ")");
    }
  }
  if (s.isMoe()) {
    if (s.topK <= 0 || s.topK > s.experts) {
      return bad(s, "top_k must be in 1..experts (got " + std::to_string(s.topK) + ")");
    }
    if (s.expertIntermediate == 0) return bad(s, "expert_intermediate must be > 0");
    if (s.firstDenseLayers > 0 && s.denseIntermediate == 0) {
      return bad(s, "first_dense_layers > 0 needs dense_intermediate > 0");
    }
  } else {
    if (s.denseIntermediate == 0) return bad(s, "a dense model needs dense_intermediate > 0");
    if (s.topK != 0 || s.sharedExperts != 0)
      return bad(s, "top_k / shared_experts without experts");
  }
  if (s.inferDtype == DType::kFP8E4M3 && s.fp8Block == 0) return bad(s, "fp8_block must be > 0");
  // Bound the total so later arithmetic cannot overflow.
  long double approx = static_cast<long double>(s.layers) *
                       (static_cast<long double>(s.experts + s.sharedExperts + 1) * 3 *
                            static_cast<long double>(s.hidden) *
                            std::max(s.expertIntermediate, s.denseIntermediate) +
                        4.0L * s.hidden * s.heads * std::max<uint64_t>(s.headDim, 256) * 2);
  approx += 2.0L * s.vocab * s.hidden;
  if (approx > static_cast<long double>(kMaxParams)) return bad(s, "too many parameters");
  return Status::ok();
}

Result<ModelSpec> loadModel(std::string_view nameOrPath) {
  for (size_t i = 0; i < detail::kEmbeddedModelCount; ++i) {
    if (nameOrPath == detail::kEmbeddedModels[i].name) {
      return parseModelToml(detail::kEmbeddedModels[i].text,
                            std::string(detail::kEmbeddedModels[i].name) + ".toml");
    }
  }
  std::string path(nameOrPath);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::string names;
    for (const auto& n : zooModels()) names += (names.empty() ? "" : ", ") + n;
    return TIDE_ERROR(Code::kNotFound, "model '" + path +
                                           "' is neither a zoo model nor a readable file "
                                           "(zoo: " +
                                           names + ")");
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return parseModelToml(ss.str(), path);
}

Result<ModelSpec> scaled(const ModelSpec& spec, int s) {
  if (s < 1) return TIDE_ERROR(Code::kInvalidArgument, "scale must be >= 1");
  if (s == 1) return spec;
  auto div = [s](uint64_t d) -> uint64_t {
    return d == 0 ? 0 : std::max<uint64_t>(1, (d + s - 1) / s);
  };
  ModelSpec m = spec;
  m.hidden = div(spec.hidden);
  m.headDim = div(spec.headDim);
  m.qLoraRank = div(spec.qLoraRank);
  m.kvLoraRank = div(spec.kvLoraRank);
  m.qkNopeHeadDim = div(spec.qkNopeHeadDim);
  m.qkRopeHeadDim = div(spec.qkRopeHeadDim);
  m.vHeadDim = div(spec.vHeadDim);
  m.denseIntermediate = div(spec.denseIntermediate);
  m.expertIntermediate = div(spec.expertIntermediate);
  m.vocab = div(spec.vocab);
  m.fp8Block = static_cast<uint32_t>(std::max<uint64_t>(1, div(spec.fp8Block)));
  m.publishedParams = 0;
  m.scale = spec.scale * s;
  m.name = spec.name;
  TIDE_RETURN_IF_ERROR(validateModel(m));
  return m;
}

}  // namespace tide::workloads
