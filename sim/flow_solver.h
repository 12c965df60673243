#pragma once
// Flow-level network: links with a capacity (bytes/s) and flows that cross a
// path of links. Rates are max-min fair (progressive filling). When flows
// start or finish, only the connected component of flows that share links
// with the touched ones is re-solved; every other flow keeps its rate.
//
// A link need not be a wire: a GPU's quantization engine or a host's memcpy
// bandwidth is a link too, so compute stages share capacity the same way.

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "sim/finish_heap.h"

namespace tide::sim {

using LinkId = uint32_t;
using FlowId = uint32_t;

// The time of an event that never comes (nextCompletion() with no flow).
inline constexpr double kNever = std::numeric_limits<double>::infinity();

class FlowSolver {
 public:
  LinkId addLink(double bytesPerSecond, std::string name = {});
  size_t linkCount() const { return links_.size(); }
  double capacity(LinkId l) const { return links_[l].capacity; }
  const std::string& linkName(LinkId l) const { return links_[l].name; }

  // Starts a flow of `bytes` over `path` at time `now`. Rates are stale until
  // resolve(now) is called (batching many starts into one solve).
  FlowId start(const std::vector<LinkId>& path, double bytes, double now);

  // Re-solves the components touched since the last call.
  void resolve(double now);

  // Earliest completion time of an active flow; kNever when none.
  double nextCompletion();
  // Removes and returns every flow finishing at or before `t` (within a
  // relative tolerance, so symmetric flows finish in one batch).
  std::vector<FlowId> popCompleted(double t);

  double rate(FlowId f) const { return flows_[f].rate; }
  size_t activeFlows() const { return active_; }
  uint64_t solves() const { return solves_; }
  uint64_t solvedFlows() const { return solvedFlows_; }

 private:
  struct Link {
    double capacity = 0;
    std::string name;
    std::vector<FlowId> flows;  // active flows crossing this link
    uint32_t mark = 0;          // BFS epoch
    double remCap = 0;          // scratch for filling
    uint32_t unfrozen = 0;      // scratch for filling
  };
  struct Flow {
    std::vector<LinkId> path;
    std::vector<uint32_t> pos;  // index of this flow in links_[path[i]].flows
    double remaining = 0;
    double rate = 0;
    double updated = 0;
    uint32_t mark = 0;
    bool active = false;
    bool frozen = false;
  };

  void detach(FlowId f);
  void fill(const std::vector<FlowId>& comp, const std::vector<LinkId>& compLinks);

  std::vector<Link> links_;
  std::vector<Flow> flows_;
  std::vector<LinkId> dirty_;
  std::vector<double> before_;  // scratch: rates before a solve
  FinishHeap finish_;           // active flows with a finite finish time
  uint32_t epoch_ = 0;
  size_t active_ = 0;
  uint64_t solves_ = 0;
  uint64_t solvedFlows_ = 0;
};

}  // namespace tide::sim
