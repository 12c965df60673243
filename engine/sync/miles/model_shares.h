#pragma once
// Byte accounting of a model under a training and an inference layout: per
// pipeline stage, the gathered bytes (training dtype, expert part), the wire
// bytes, and what one inference rank holds of that stage.

#include <vector>

#include "workloads/layout.h"
#include "workloads/model.h"

namespace tide::sync::miles {

struct StageBytes {
  double train = 0;        // whole stage, training dtype
  double trainExpert = 0;  // routed-expert part of `train` (gathered over EP)
  double wire = 0;         // whole stage as sent (FP8 + scales, or training dtype)
  double share = 0;        // wire bytes one inference rank holds of this stage
  double tensors = 0;      // checkpoint (HF) tensors of the stage
  // As handed to a weight loader (an FP8 tensor comes with its scale tensor),
  // and of those the ones one inference rank keeps a part of.
  double loadTensors = 0;
  double keptLoadTensors = 0;
  double scanSteps = 0;  // loader name-matching steps over loadTensors (loader_scan.h)
  double mapSteps = 0;   // a p2p source's name mapping over the same tensors (loader_scan.h)
  // Of `train` and `tensors`, what is block-quantized when FP8 goes on the
  // wire (embeddings, norms, the router and the head stay BF16).
  double quantTrain = 0;
  double quantTensors = 0;
  // The framework's gather units: a routed-expert unit is one local
  // expert's fused gate/up or its down projection; every other unit is
  // counted as a checkpoint tensor.
  double units = 0;
  double moeLayers = 0;  // layers with routed experts
  double buckets = 0;    // as the framework cuts them

  StageBytes& operator+=(const StageBytes& o);
};

struct ModelShares {
  std::vector<StageBytes> stages;
  // The same per stage and update phase: the RL framework updates every
  // stage's non-expert weights (TP-gathered) first, all ranks meet at a
  // barrier, then the routed experts (EP-gathered). Index 0 or 1.
  std::vector<StageBytes> phases[2];
  double wireTotal = 0;
  double trainTotal = 0;
  double sharePerRank = 0;  // wire bytes one inference rank holds in total
  double params = 0;
};

// Every stage's phases are cut into buckets of at most `bucketBytes` as the
// RL framework cuts them (model_shares.cc).
ModelShares computeShares(const workloads::ModelSpec& model, const workloads::TrainLayout& train,
                          const workloads::InferLayout& infer, bool fp8Wire, double bucketBytes);

}  // namespace tide::sync::miles
