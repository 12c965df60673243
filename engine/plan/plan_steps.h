#pragma once
// The non-wire work of a whole update, as typed steps of a TransferPlan:
// group collectives, device and host copies, counted host operations,
// conversion and quantization passes, memory registration, control rounds to
// the engines, engine-side post-processing, locks and barriers. A step holds
// counts and bytes, never seconds: a cost profile prices them (sim/), and a
// topology turns its bytes into flows. Plain data, no addresses.
//
// Compactness: a collective names its members once (a group); one rank of
// an engine may stand for its peers where they do the same work at once; a
// step stands for `count` merged real ones where a strategy merges buckets.

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/core/status.h"

namespace tide::plan {

enum class StepKind : uint8_t {
  kJoin,          // no work: waits for its dependencies (a barrier)
  kHostOps,       // host CPU on `rank`: `count` eager tensor operations, `loopSteps` interpreter
                  // loop steps (name matching)
  kControlRound,  // `count` control round trips from `rank` to the engines
  kPostprocess,   // post-load processing on engine rank `rank`: `count` layers re-quantized
  kRegister,      // `count` pages pinned and registered on `rank`
  kDevicePass,    // `bytes` through `rank`'s device memory (a copy or a conversion pass)
  kDeviceToHost,  // `bytes` from `rank`'s device into its node's host memory
  kAllGather,     // ring all-gather among `group`: `bytes` gathered, over `lanes` rings;
                  // `count` real collectives (each pays the ring's latency)
  kBroadcast,     // chain broadcast from `rank` to `group`: `bytes` over `lanes` chains in
                  // chunks of `chunkBytes`; `count` real broadcasts (each fills the pipeline)
  kHostWrite,     // one-sided write of `bytes` from `rank`'s host memory to `peer`
};
inline constexpr int kStepKindCount = 10;
const char* stepKindName(StepKind k);

inline constexpr uint32_t kNoGroup = 0xffffffffu;

struct Step {
  StepKind kind = StepKind::kJoin;
  uint16_t stage = 0;  // index into StepGraph::stageNames: the breakdown row it counts to
  uint16_t lanes = 1;
  uint32_t rank = 0;
  uint32_t peer = 0;
  uint32_t group = kNoGroup;
  int32_t acquire = -1;  // lock taken before the step starts
  int32_t release = -1;  // lock released when it ends
  double count = 0;
  double loopSteps = 0;
  double bytes = 0;
  double chunkBytes = 0;
};

// A server that takes one request at a time. Polled: a client that finds
// it held sleeps and tries again (the period is the profile's lock_poll);
// else it passes first-come to the oldest waiter.
struct StepLock {
  bool polled = false;
  uint16_t stage = 0;  // the breakdown row a polled lock's idle waits count to
};

// Stage names a simulator times the update's spans by: the control rounds
// that open and close it, a first update's registration, post-processing.
inline constexpr const char* kStageRounds = "pause_resume";
inline constexpr const char* kStageRegister = "register";
inline constexpr const char* kStagePostprocess = "postprocess";

struct StepGraph {
  std::vector<std::string> stageNames;
  std::vector<std::vector<uint32_t>> groups;  // plan rank ids
  std::vector<StepLock> locks;
  std::vector<Step> steps;
  std::vector<std::pair<uint32_t, uint32_t>> edges;  // (before, after) step ids
  // What the steps stand for: real buckets per pipeline stage, real buckets
  // per step of a merged bucket (at most), and the model's bytes as sent.
  uint32_t bucketsPerStage = 0;
  double mergeFactor = 1;
  double wireBytes = 0;

  bool empty() const { return steps.empty(); }
  uint16_t stage(std::string_view name);
  uint32_t add(Step s);
  uint32_t join() { return add(Step{}); }
  // A step on `rank` of `kind` with `count`, in `stage`.
  uint32_t add(StepKind kind, uint32_t rank, double count, uint16_t stage);
  uint32_t group(std::vector<uint32_t> members);
  int32_t lock(bool polled);
  void dep(uint32_t before, uint32_t after) { edges.emplace_back(before, after); }

  // References in range, edges forward-free of cycles, non-negative sizes;
  // `ranks` is the plan's rank count.
  [[nodiscard]] Status validate(size_t ranks) const;
  nlohmann::json toJson() const;
  static Result<StepGraph> fromJson(const nlohmann::json& j);
};

}  // namespace tide::plan
