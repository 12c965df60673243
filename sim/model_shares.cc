#include "sim/model_shares.h"

#include "sim/loader_scan.h"

namespace tide::sim {

StageBytes& StageBytes::operator+=(const StageBytes& o) {
  train += o.train;
  trainExpert += o.trainExpert;
  wire += o.wire;
  share += o.share;
  tensors += o.tensors;
  loadTensors += o.loadTensors;
  keptLoadTensors += o.keptLoadTensors;
  scanSteps += o.scanSteps;
  mapSteps += o.mapSteps;
  return *this;
}

ModelShares computeShares(const workloads::ModelSpec& model, const workloads::TrainLayout& train,
                          const workloads::InferLayout& infer, bool fp8Wire) {
  workloads::ModelInventory inv = workloads::buildInventory(model);
  ModelShares out;
  out.stages.resize(train.pp);
  for (auto& p : out.phases) p.resize(train.pp);
  for (const auto& t : inv.tensors) {
    int stage = 0;
    if (t.layer >= 0) {
      stage = workloads::stageOfLayer(train, model.layers, t.layer);
    } else if (t.kind != workloads::TensorKind::kEmbedding) {
      stage = train.pp - 1;  // final norm and lm_head sit on the last stage
    }
    double tb = static_cast<double>(t.trainBytes());
    double wb = static_cast<double>(fp8Wire ? t.inferBytes() : t.trainBytes());
    // Fraction of the tensor one inference rank holds (averaged over ranks;
    // the layouts split evenly).
    bool expert = t.kind == workloads::TensorKind::kRoutedExpert;
    double frac = 1.0;
    if (expert) {
      frac = 1.0 / infer.tp;  // E/EP experts per rank, each split over TP/EP
    } else if (t.tp != workloads::TpSplit::kReplicated) {
      frac = 1.0 / (t.dpAttnReplicated ? infer.attnTp() : infer.tp);
    }
    StageBytes s;
    s.train = tb;
    if (expert) s.trainExpert = tb;
    s.wire = wb;
    s.share = wb * frac;
    s.tensors = 1;
    // A routed expert lives on one EP rank (split over MoE-TP there); every
    // other tensor is kept, whole or as a slice, by every rank.
    bool kept = !expert || t.expert % infer.ep == 0;    // the share of one EP rank
    double copies = fp8Wire && t.fp8Block > 0 ? 2 : 1;  // weight and its block scales
    s.loadTensors = copies;
    s.keptLoadTensors = kept ? copies : 0;
    s.scanSteps = copies * loaderScanSteps(t, inv.experts);
    s.mapSteps = copies * mapperScanSteps(t, inv.experts);
    out.stages[stage] += s;
    out.phases[expert ? 1 : 0][stage] += s;
    out.params += static_cast<double>(t.numel());
  }
  for (const auto& s : out.stages) {
    out.wireTotal += s.wire;
    out.trainTotal += s.train;
    out.sharePerRank += s.share;
  }
  return out;
}

}  // namespace tide::sim
