#pragma once
// TransferPlan: what a weight-sync strategy emits and what both executors
// (the real one on a transport, the simulator on a topology) run. Plain,
// address-free, serializable data:
//
//  * ranks with roles (trainer / inference / store) and placement (node, gpu);
//  * tensors (logical shapes and dtypes);
//  * holdings: the buffers each rank has, as N-D boxes of a logical tensor in
//    one buffer space (its training shard, a staging replica, its inference
//    shard). An address is resolved by the executor: a region's offset and
//    row strides follow from the holding box that contains it (row-major);
//  * buckets: packed buffers (broadcast payloads) listing tensor boxes in order;
//  * moves (src rank, src region) -> (dst rank, dst region), one per box (never
//    per row or element), with bytes, kind, path, stage and bucket;
//  * stages with dependencies (a DAG; a dependency may be per bucket, which is
//    how gather -> convert -> write pipelines);
//  * the update's non-wire work as typed steps (plan_steps.h): collectives,
//    copies, counted host operations, registration, control rounds, locks.
//    A strategy that models another system's update at scale may describe
//    it by steps alone, without boxes.

#include <array>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/status.h"
#include "engine/plan/plan_params.h"
#include "engine/plan/plan_steps.h"
#include "workloads/box.h"
#include "workloads/dtype.h"

namespace tide::plan {

// 2: typed "params" (plan_params.h) with the workload the plan describes.
inline constexpr int kPlanSchemaVersion = 2;
inline constexpr const char* kPlanSchema = "tide.plan/2";

enum class Role : uint8_t { kTrainer, kInference, kStore };

// Which buffer of a rank a region lives in.
enum class Space : uint8_t {
  kTrain,    // the training shard (training dtype)
  kStaging,  // a staging replica (gathered and/or converted), registered once
  kInfer,    // the inference shard: the destination of a weight update
  kBucket,   // a packed bucket buffer, addressed by bucket id + entry box
};

// What a move does.
enum class MoveKind : uint8_t {
  kWrite,         // one-sided write of a region to another rank
  kGather,        // a shard sent to the rank that assembles a tensor
  kBroadcastHop,  // one hop of a chunk-pipelined chain broadcast of a bucket
  kConvert,       // local copy / dtype conversion on one rank (src == dst)
};

// Where the bytes travel; fixed by the ranks' placement.
enum class Path : uint8_t {
  kLocal,      // same rank
  kIntraNode,  // same node: NVLink / shared memory
  kNetwork,    // across nodes: the NICs
};

const char* roleName(Role r);
const char* spaceName(Space s);
const char* moveKindName(MoveKind k);
const char* pathName(Path p);

// Compact N-D box (up to kMaxDims) so a plan with tens of millions of moves
// stays small: 32-bit coordinates (a tensor dimension never reaches 2^32;
// from() refuses one that does) make a box 36 bytes and a move 72 instead of
// 112. Converts to and from workloads::Box.
inline constexpr int kMaxDims = 4;
using Coord = uint32_t;
inline constexpr uint64_t kMaxCoord = 0xffffffffull;
struct RegionBox {
  uint8_t ndim = 0;
  std::array<Coord, kMaxDims> lo{};
  std::array<Coord, kMaxDims> hi{};

  static Result<RegionBox> from(const workloads::Box& b);
  workloads::Box toBox() const;
  uint64_t volume() const;
  bool empty() const { return volume() == 0; }
  bool contains(const RegionBox& inner) const;
  bool overlaps(const RegionBox& o) const;
  std::string toString() const;
  bool operator==(const RegionBox& o) const = default;
};
bool intersect(const RegionBox& a, const RegionBox& b, RegionBox* out);

struct RankInfo {
  uint32_t id = 0;
  Role role = Role::kTrainer;
  uint32_t node = 0;
  uint32_t gpu = 0;  // index within the node
};

struct TensorInfo {
  uint32_t id = 0;
  std::string name;
  std::vector<uint64_t> shape;
  workloads::DType trainDtype = workloads::DType::kBF16;
  workloads::DType inferDtype = workloads::DType::kBF16;
  uint32_t fp8Block = 0;  // block-scale edge when inferDtype is FP8
};

struct Holding {
  uint32_t rank = 0;
  Space space = Space::kTrain;
  uint32_t tensor = 0;
  RegionBox box;
  workloads::DType dtype = workloads::DType::kBF16;
};

struct BucketEntry {
  uint32_t tensor = 0;
  RegionBox box;
  workloads::DType dtype = workloads::DType::kBF16;
};

struct Bucket {
  uint32_t id = 0;
  uint32_t owner = 0;  // the rank that packs it
  uint32_t stage = 0;
  std::vector<BucketEntry> entries;  // packed back to back, in this order
  uint64_t bytes = 0;
};

// The bucket's payload as a whole (broadcast hops move buckets, not boxes).
inline constexpr uint32_t kWholeBucket = 0xffffffffu;

struct Move {
  uint32_t src = 0;
  uint32_t dst = 0;
  uint32_t tensor = 0;  // kWholeBucket: the move carries bucket `bucket` whole
  RegionBox box;        // logical box (same coordinates at src and dst)
  Space srcSpace = Space::kTrain;
  Space dstSpace = Space::kInfer;
  workloads::DType srcDtype = workloads::DType::kBF16;
  workloads::DType dstDtype = workloads::DType::kBF16;
  MoveKind kind = MoveKind::kWrite;
  Path path = Path::kNetwork;
  uint32_t stage = 0;
  uint32_t bucket = 0;
  uint64_t bytes = 0;  // bytes delivered at dst (incl. fp8 scales)
};

struct Dependency {
  uint32_t stage = 0;
  bool perBucket = false;  // bucket b may start once bucket b of `stage` is done
};

struct Stage {
  uint32_t id = 0;
  std::string name;
  std::vector<Dependency> deps;  // only on earlier stages: the graph is a DAG
};

struct PlanSummary {
  uint64_t moves = 0;
  uint64_t totalBytes = 0;
  std::vector<uint64_t> sentBytes;      // per rank, excluding local moves
  std::vector<uint64_t> receivedBytes;  // per rank, excluding local moves
  std::array<uint64_t, 4> bytesByKind{};
  std::array<uint64_t, 3> bytesByPath{};
  std::array<uint64_t, 4> movesByKind{};
  nlohmann::json toJson() const;
};

struct TransferPlan {
  std::string strategy;
  PlanParams params;
  std::vector<RankInfo> ranks;
  std::vector<TensorInfo> tensors;
  std::vector<Holding> holdings;
  std::vector<Bucket> buckets;
  std::vector<Stage> stages;
  std::vector<Move> moves;
  StepGraph work;

  // Adds a move, filling path and bytes from the ranks and the tensor.
  Move& addMove(Move m);
  uint32_t addStage(std::string name, std::vector<Dependency> deps = {});

  // Bytes of `box` of `tensor` in `dtype` (FP8 adds one fp32 per touched block).
  uint64_t regionBytes(uint32_t tensor, const RegionBox& box, workloads::DType dtype) const;
  Path pathBetween(uint32_t a, uint32_t b) const;

  // Checks references, containment, paths, bytes, stage order, and that
  // every inference-shard byte is written exactly once. Fails with the reason.
  [[nodiscard]] Status validate() const;
  PlanSummary summarize() const;

  nlohmann::json toJson() const;
  // A parsed plan is validated: every plan a caller holds (a strategy's or
  // a file's) is valid, so its consumers need not check it again.
  static Result<TransferPlan> fromJson(const nlohmann::json& j);
  // A plan file (tide plan --json), parsed and validated; errors name the file.
  static Result<TransferPlan> load(const std::string& path);
};

}  // namespace tide::plan
