#include "engine/sync/miles/model_shares.h"

#include <algorithm>
#include <string>
#include <vector>

#include "engine/sync/miles/loader_scan.h"

namespace tide::sync::miles {

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
  quantTrain += o.quantTrain;
  quantTensors += o.quantTensors;
  units += o.units;
  moeLayers += o.moeLayers;
  buckets += o.buckets;
  return *this;
}

namespace {

// The RL framework's bucket cut: whole units (gathered tensors) are added in
// order and a bucket is sent before a unit would take it past the
// threshold, so a unit larger than the threshold is a bucket of its own.
double cutBuckets(const std::vector<double>& units, double threshold) {
  double buckets = 0, held = 0;
  for (double u : units) {
    if (held > 0 && held + u > threshold) {
      ++buckets;
      held = 0;
    }
    held += u;
  }
  return buckets + (held > 0 ? 1 : 0);
}

// One MoE layer's routed experts as the framework's units: on every EP rank
// each local expert's fused gate/up (fc1), then each one's down projection
// (fc2); a unit is gathered over EP, so it carries EP experts' bytes.
struct ExpertLayer {
  int stage = 0;
  double fc1 = 0, fc2 = 0;  // one expert's bytes
  int experts = 0;
};

}  // namespace

ModelShares computeShares(const workloads::ModelSpec& model, const workloads::TrainLayout& train,
                          const workloads::InferLayout& infer, bool fp8Wire, double bucketBytes) {
  workloads::ModelInventory inv = workloads::buildInventory(model);
  ModelShares out;
  out.stages.resize(train.pp);
  for (auto& p : out.phases) p.resize(train.pp);
  std::vector<std::vector<double>> denseUnits(train.pp);
  std::vector<ExpertLayer> expertLayers(std::max(0, model.layers));
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
    double frac = workloads::inferFraction(t, infer);
    StageBytes s;
    s.train = tb;
    if (expert) s.trainExpert = tb;
    s.wire = wb;
    s.share = wb * frac;
    s.tensors = 1;
    // A routed expert lives on one EP rank (split over MoE-TP there); every
    // other tensor is kept, whole or as a slice, by every rank.
    bool kept = !expert || t.expert % infer.ep == 0;  // the share of one EP rank
    bool quantized = fp8Wire && t.fp8Block > 0;
    double copies = quantized ? 2 : 1;  // weight and its block scales
    if (quantized) {
      s.quantTrain = tb;
      s.quantTensors = 1;
    }
    s.units = expert ? 0 : 1;  // expert units are counted per layer below
    s.loadTensors = copies;
    s.keptLoadTensors = kept ? copies : 0;
    s.scanSteps = copies * loaderScanSteps(t, inv.experts);
    s.mapSteps = copies * mapperScanSteps(t, inv.experts);
    out.phases[expert ? 1 : 0][stage] += s;
    out.params += static_cast<double>(t.numel());
    if (!expert) {
      // The framework's non-expert units are its own parameters, some of
      // them fusions of these (q/k/v, gate/up); the checkpoint tensors pack
      // the buckets about the same.
      denseUnits[stage].push_back(tb);
    } else if (t.layer < model.layers) {
      ExpertLayer& el = expertLayers[t.layer];
      el.stage = stage;
      el.experts = std::max(el.experts, t.expert + 1);
      if (t.expert == 0) (t.name.find("down_proj") != std::string::npos ? el.fc2 : el.fc1) += tb;
    }
  }
  std::vector<std::vector<double>> expertUnits(train.pp);
  int ep = std::max(1, train.ep);
  for (const ExpertLayer& el : expertLayers) {
    if (el.experts == 0) continue;
    int local = el.experts / ep;
    auto& u = expertUnits[el.stage];
    u.insert(u.end(), local, el.fc1 * ep);
    u.insert(u.end(), local, el.fc2 * ep);
    out.phases[1][el.stage].moeLayers += 1;
  }
  for (int s = 0; s < train.pp; ++s) {
    out.phases[0][s].buckets = cutBuckets(denseUnits[s], bucketBytes);
    out.phases[1][s].buckets = cutBuckets(expertUnits[s], bucketBytes);
    out.phases[1][s].units = static_cast<double>(expertUnits[s].size());
    out.stages[s] = out.phases[0][s];
    out.stages[s] += out.phases[1][s];
  }
  for (const auto& s : out.stages) {
    out.wireTotal += s.wire;
    out.trainTotal += s.train;
    out.sharePerRank += s.share;
  }
  return out;
}

}  // namespace tide::sync::miles
