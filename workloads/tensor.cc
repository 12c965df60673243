#include "workloads/tensor.h"

namespace tide::workloads {

const char* kindName(TensorKind k) {
  switch (k) {
    case TensorKind::kEmbedding:
      return "embedding";
    case TensorKind::kAttention:
      return "attention";
    case TensorKind::kNorm:
      return "norm";
    case TensorKind::kRouter:
      return "router";
    case TensorKind::kDenseMlp:
      return "dense_mlp";
    case TensorKind::kSharedExpert:
      return "shared_expert";
    case TensorKind::kRoutedExpert:
      return "routed_expert";
    case TensorKind::kLmHead:
      return "lm_head";
  }
  return "?";
}

const char* tpSplitName(TpSplit s) {
  switch (s) {
    case TpSplit::kReplicated:
      return "replicated";
    case TpSplit::kColumn:
      return "column";
    case TpSplit::kRow:
      return "row";
  }
  return "?";
}

uint64_t TensorSpec::numel() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  return n;
}

uint64_t TensorSpec::inferBytes() const {
  uint64_t b = numel() * bytesOf(inferDtype);
  if (inferDtype == DType::kFP8E4M3 && fp8Block > 0 && !shape.empty()) {
    // One fp32 scale per block x block tile of the last two dims (per row block for 1-D).
    uint64_t rows = shape.size() >= 2 ? shape[shape.size() - 2] : 1;
    uint64_t cols = shape.back();
    uint64_t outer = numel() / (rows * cols);
    b += outer * ((rows + fp8Block - 1) / fp8Block) * ((cols + fp8Block - 1) / fp8Block) * 4;
  }
  return b;
}

uint64_t ModelInventory::totalParams() const {
  uint64_t n = 0;
  for (const auto& t : tensors) n += t.numel();
  return n;
}

uint64_t ModelInventory::bytes(bool inference) const {
  uint64_t n = 0;
  for (const auto& t : tensors) n += inference ? t.inferBytes() : t.trainBytes();
  return n;
}

uint64_t ModelInventory::paramsOfKind(TensorKind k) const {
  uint64_t n = 0;
  for (const auto& t : tensors) {
    if (t.kind == k) n += t.numel();
  }
  return n;
}

int64_t ModelInventory::find(const std::string& name) const {
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].name == name) return static_cast<int64_t>(i);
  }
  return -1;
}

}  // namespace tide::workloads
