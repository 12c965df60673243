#include "sim/work_graph.h"

namespace tide::sim {

const char* taskPathName(TaskPath p) {
  switch (p) {
    case TaskPath::kCompute:
      return "compute";
    case TaskPath::kNvlink:
      return "nvlink";
    case TaskPath::kRdma:
      return "rdma";
    case TaskPath::kNccl:
      return "nccl";
    case TaskPath::kPcieH2D:
      return "pcie_h2d";
    case TaskPath::kPcieD2H:
      return "pcie_d2h";
    case TaskPath::kHostMem:
      return "host_mem";
    case TaskPath::kDisk:
      return "disk";
  }
  return "?";
}

uint16_t WorkGraph::stageId(const std::string& name) {
  for (size_t i = 0; i < stageNames_.size(); ++i) {
    if (stageNames_[i] == name) return static_cast<uint16_t>(i);
  }
  stageNames_.push_back(name);
  return static_cast<uint16_t>(stageNames_.size() - 1);
}

uint32_t WorkGraph::addPath(std::vector<LinkId> links) {
  paths_.push_back(std::move(links));
  return static_cast<uint32_t>(paths_.size() - 1);
}

TaskId WorkGraph::addFlow(uint32_t path, double bytes, double latency, int32_t src, int32_t dst,
                          uint16_t stage, TaskPath kind) {
  Task t;
  t.isFlow = true;
  t.pathId = path;
  t.bytes = bytes;
  t.seconds = latency;
  t.src = src;
  t.dst = dst;
  t.stage = stage;
  t.kind = kind;
  tasks_.push_back(std::move(t));
  return static_cast<TaskId>(tasks_.size() - 1);
}

TaskId WorkGraph::addDelay(double seconds, int32_t rank, uint16_t stage) {
  Task t;
  t.seconds = seconds;
  t.src = rank;
  t.dst = rank;
  t.stage = stage;
  tasks_.push_back(std::move(t));
  return static_cast<TaskId>(tasks_.size() - 1);
}

TaskId WorkGraph::addJoin() {
  Task t;
  t.record = false;
  tasks_.push_back(std::move(t));
  return static_cast<TaskId>(tasks_.size() - 1);
}

void WorkGraph::dep(TaskId before, TaskId after) {
  tasks_[before].succ.push_back(after);
  ++tasks_[after].pendingDeps;
}

}  // namespace tide::sim
