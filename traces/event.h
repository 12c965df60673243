#pragma once
// One transfer event, as every executor (real or simulated) records it, and
// the sink interface they write to. Plain data, no HDF5: any layer can fill
// events; traces::EventWriter (event_writer.h) stores them in a trace file.

#include <cstdint>
#include <mutex>
#include <string_view>
#include <vector>

#include "engine/core/status.h"

namespace tide::traces {

// The physical path a transfer used.
enum class EventPath : uint8_t {
  kUnknown = 0,
  kNvlink,
  kRdma,
  kTcp,
  kShm,
  kNccl,
  kPcieH2D,
  kPcieD2H,
  kHostMem,  // host memcpy (e.g. loading a CPU replica)
  kDisk,
  kStore,    // a snapshot / object store
  kCompute,  // not a transfer: post-processing, pause/resume, registration
};
inline constexpr int kEventPathCount = 12;

const char* pathName(EventPath p);  // "nvlink", "rdma", ...
// Name -> path; kUnknown when the name is not known.
EventPath parsePath(std::string_view name);

struct Event {
  double tStart = 0;  // seconds from the start of the run
  double tEnd = 0;
  int32_t src = -1;  // global rank (-1: none / a store)
  int32_t dst = -1;
  uint64_t bytes = 0;
  int32_t stage = 0;  // TransferPlan stage index
  int32_t step = 0;   // RL step / weight version
  EventPath path = EventPath::kUnknown;
  // The unit of the plan's schedule it ran (engine/plan/schedule.h) and
  // which of its pieces; -1: no unit (a whole step's traffic, a model's step).
  int32_t unit = -1;
  uint32_t piece = 0;
};

class EventSink {
 public:
  virtual ~EventSink() = default;
  [[nodiscard]] virtual Status append(const Event& e) = 0;
  [[nodiscard]] virtual Status flush() = 0;
};

// Keeps events in memory (tests, the simulator's in-process comparisons). Thread-safe.
class MemoryEventSink final : public EventSink {
 public:
  Status append(const Event& e) override {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(e);
    return Status::ok();
  }
  Status flush() override { return Status::ok(); }
  std::vector<Event> events() const {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<Event> events_;
};

}  // namespace tide::traces
