#pragma once
// The typed parameters of a TransferPlan: the options a strategy planned it
// with (PlanOptions, tide's one set of defaults: `tide sync`, `tide plan`,
// `tide sim` and scenario files all start from these) and the workload it
// describes (PlanWorkload: model, layouts, placement, cluster), which `tide
// sync --plan` checks a run against. On disk they are the "params" object
// of a tide.plan/2 file (docs/formats/plan.md); no code reads a parameter by
// a string key.

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "engine/core/status.h"
#include "engine/core/units.h"

namespace tide::plan {

// Which training rank a p2p target reads a piece from.
enum class Assignment : uint8_t {
  kBalanced,    // the least loaded holder (p2p)
  kRoundRobin,  // holders in turn (p2p-rr, the baseline)
};
// Where p2p's gathered and converted replica lives.
enum class Staging : uint8_t {
  kHost,    // pinned host memory, registered once
  kDevice,  // device memory
};
const char* assignmentName(Assignment a);
const char* stagingName(Staging s);

struct PlanOptions {
  // Pipeline / broadcast unit, in training-dtype bytes.
  uint64_t bucketBytes = kGiB;
  // Pipelining chunk of a broadcast hop: a chain forwards a bucket in pieces
  // of this size (NCCL's default slice for its simple protocol).
  uint64_t chunkBytes = 512 * kKiB;
  int channels = 0;  // broadcast rings; 0 = the cluster's NICs per node
  Assignment assignment = Assignment::kBalanced;
  Staging staging = Staging::kHost;
  // Of an update modelled at scale (the strategies that plan by steps):
  bool fp8Wire = true;        // FP8 (block scales) on the wire, else the training dtype
  bool firstUpdate = false;   // include the one-time memory registration
  uint64_t pageBytes = 4096;  // registration page
  bool pipelined = false;     // overlap buckets (a static schedule) instead of one at a time
  int maxStepBuckets = 64;    // buckets per pipeline stage kept distinct; more are merged

  bool operator==(const PlanOptions&) const = default;
};

// What the plan was made for. Empty strings: not recorded (a plan written
// by hand or by another tool).
struct PlanWorkload {
  std::string model;       // zoo name or model file, as given
  int scale = 1;           // hidden dims divided by this
  std::string inferDtype;  // the served dtype ("bf16", "fp8e4m3")
  uint32_t fp8Block = 0;   // FP8 block-scale edge
  std::string train;       // training layout (its canonical text)
  std::string infer;       // inference layout
  std::string cluster;     // the cluster it was planned on
  int gpusPerNode = 0;     // placement: GPUs per node
  bool colocated = false;  // inference rank i on training rank i's GPU
  int inferFirstGpu = -1;  // GPU id of inference rank 0 (-1: the node after training)

  bool operator==(const PlanWorkload&) const = default;
};

struct PlanParams {
  PlanOptions options;
  PlanWorkload workload;

  bool operator==(const PlanParams&) const = default;
  nlohmann::json toJson() const;
  // Unknown keys are refused (a typo would otherwise plan with a default);
  // missing ones keep their defaults.
  static Result<PlanParams> fromJson(const nlohmann::json& j);
};

}  // namespace tide::plan
