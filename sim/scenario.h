#pragma once
// A simulation scenario (TOML, docs/formats/scenario.md): model, training and
// inference layouts and their nodes, cluster, strategy parameters,
// calibration overrides and optional published figures to compare with.

#include <array>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/status.h"
#include "engine/plan/plan_params.h"
#include "sim/calibration.h"
#include "sim/cost_profile.h"
#include "workloads/cluster.h"
#include "workloads/layout.h"
#include "workloads/model.h"

namespace tide::sim {

struct StrategyParams {
  // Strategies to run, by descriptor name (engine/sync/strategy_registry.h;
  // the caller checks them): by default the models of the published runs.
  std::vector<std::string> names{"miles-broadcast", "miles-p2p"};
  // What its plans are made with (bucket, chunk, channels, FP8 on the wire,
  // a first update, pipelining, max_sim_buckets as maxStepBuckets): the
  // plan's own options, with their one set of defaults
  // (engine/plan/plan_params.h).
  plan::PlanOptions options;
  // A run of one strategy may set its own ([strategy.<name>] bucket: the
  // framework takes one buffer size per run); every such table is listed,
  // 0 where it sets no bucket, so that its name is checked.
  std::map<std::string, uint64_t, std::less<>> ownBucketBytes;
  uint64_t bucketFor(std::string_view strategy) const {
    auto it = ownBucketBytes.find(strategy);
    return it != ownBucketBytes.end() && it->second > 0 ? it->second : options.bucketBytes;
  }
};

struct Scenario {
  std::string name;
  workloads::ModelSpec model;
  workloads::TrainLayout train;
  workloads::InferLayout infer;
  int trainNodes = 0;
  // 0 (`[infer] nodes = 0`): the engines sit on the training nodes' GPUs
  // after the training ranks.
  int inferNodes = 0;
  // `[infer] colocated = true`: inference rank i shares training rank i's
  // GPU (plan::Placement::colocated; as many ranks of each), inferNodes 0.
  bool colocated = false;
  workloads::ClusterSpec cluster;
  StrategyParams strategy;
  // The non-wire costs: the cost profile's, with this scenario's overrides
  // ([strategy] lock_poll_ms, [calibration]) applied. `[strategy] profile`
  // prices every strategy the scenario runs (profileGiven); without it each
  // strategy is priced by its own descriptor's profile (withProfile), and
  // `profile` here is "miles", the stack of the published runs, for a
  // strategy that names none.
  std::string profileName = "miles";
  bool profileGiven = false;
  CostProfile profile;
  Calibration calib;
  // Profile keys this scenario sets itself: they hold whatever profile prices.
  std::vector<std::string> overriddenKeys;
  bool sharesTrainNodes() const { return inferNodes == 0; }
  // GPU id of inference rank 0: GPUs are numbered node * gpus_per_node + gpu.
  int inferBase() const {
    if (colocated) return 0;
    return sharesTrainNodes() ? train.worldSize() : trainNodes * cluster.gpusPerNode;
  }
  // The spans of an update, in its order (StrategyResult times each).
  static constexpr std::array<std::string_view, 3> kSpans{"prepare", "transfer", "finalize"};
  // Published update times to compare with: per strategy its primary figure
  // (label empty), any other published figure under a label, and figures of
  // one span of the update (`span`, one of kSpans), listed in that order.
  struct Published {
    std::string strategy, label, span;
    double seconds = 0;
    bool primary() const { return label.empty() && span.empty(); }
    // "published", "published (label)" or "published (transfer span)".
    std::string name() const {
      if (!span.empty()) return "published (" + span + " span)";
      return label.empty() ? "published" : "published (" + label + ")";
    }
  };
  std::vector<Published> published;
};

Result<Scenario> loadScenario(const std::string& path);
Result<Scenario> parseScenario(std::string_view tomlText, std::string_view origin);
// The same scenario priced by the profile `nameOrPath`, its own overrides
// kept (the scenario itself when that is already its profile).
Result<Scenario> withProfile(const Scenario& s, std::string_view nameOrPath);
// Checks layouts against the model and the node counts.
Status validateScenario(const Scenario& s);

}  // namespace tide::sim
