#pragma once
// The one table of weight-sync strategies. A strategy is a descriptor: its
// name, the plan builder, how its updates are delivered (which executors
// can run it), the cost profile its plan's steps are priced with. Nothing
// outside this table compares strategy names; callers look a descriptor up
// and read its fields.
//
// tide's own designs have plain names (broadcast, p2p, disk-delta, store);
// models of other systems are named after the system (miles-broadcast,
// miles-p2p) and are simulated only.

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "engine/core/status.h"
#include "engine/sync/strategy.h"

namespace tide::sync {

// How an update's bytes reach the engines.
enum class Delivery : uint8_t {
  kWire,       // the plan's moves on a transport (tide sync; the simulator)
  kDiskDelta,  // delta files on a shared file system, read as the plan says
  kStore,      // snapshots in the ranks' store segments, read as the plan says
  kModel,      // a model of another system's update: simulated, not run
};
const char* deliveryName(Delivery d);

// What a plan builder needs of the problem.
enum class PlanInput : uint8_t {
  kBoxes,   // every rank's holdings and the reshard's pieces (box-level moves)
  kCounts,  // ranks and the model's counts only (plans by steps, at any scale)
};

struct StrategyDescriptor {
  std::string_view name;
  std::string_view summary;
  std::string_view models;  // the system whose update it models; empty for tide's own
  // The cost profile its plan's steps are modelled with: what `tide
  // validate` prices a plan of it with, and what `tide strategies` names.
  // A scenario's [strategy] profile prices every strategy it runs. Empty:
  // its plans have no priced steps (the cluster's figures time all of them).
  std::string_view profile;
  Delivery delivery = Delivery::kWire;
  PlanInput input = PlanInput::kBoxes;
  // The descriptor whose builder makes its plan (a delivery over another
  // strategy's plan); null: `make`.
  const StrategyDescriptor* planner = nullptr;
  std::unique_ptr<Strategy> (*make)() = nullptr;
  // Delivery properties the executor's options depend on.
  bool sparseDeltas = false;          // --sparse: deltas of changed blocks only
  bool relaysThroughTargets = false;  // forwards from inference shards (a chain)

  bool runsForReal() const { return delivery != Delivery::kModel; }
  // Simulated: its own plan is the update (a delivery over files or a store
  // is timed by what the simulator does not model).
  bool simulated() const { return planner == nullptr; }
  Result<std::unique_ptr<Strategy>> planBuilder() const;
};

std::span<const StrategyDescriptor> strategyTable();
// The descriptor of that name, or an error listing the known names.
Result<const StrategyDescriptor*> findStrategy(std::string_view name);
// Names of the descriptors for which `pred` holds, joined by ", ".
std::string strategyNames(bool (*pred)(const StrategyDescriptor&) = nullptr);
// The name a run of `d` reports: its own, or with `--sparse` (deltas of
// changed blocks), "<name>-sparse".
std::string runName(const StrategyDescriptor& d, bool sparse);
// The plan builder of `name` (its planner's, for a delivery over another plan).
Result<std::unique_ptr<Strategy>> createStrategy(std::string_view name);

}  // namespace tide::sync
