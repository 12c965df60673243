#include "sim/topology.h"

#include <algorithm>
#include <string>

namespace tide::sim {

namespace {
// A figure of 0 means "not a limit" (e.g. the memory paths of an emulated
// same-host cluster): no link is made and paths skip it.
LinkId maybeLink(FlowSolver& s, double cap, std::string name) {
  return cap > 0 ? s.addLink(cap, std::move(name)) : kNoLink;
}
}  // namespace

Topology::Topology(const workloads::ClusterSpec& spec, int nodes, FlowSolver& solver)
    : solver_(solver),
      gpusPerNode_(std::max(1, spec.gpusPerNode)),
      nicsPerNode_(std::max(1, spec.nicsPerNode)),
      nodesPerLeaf_(spec.fabric.nodesPerLeaf),
      latency_(spec.fabric.latencySeconds) {
  for (int n = 0; n < nodes; ++n) {
    std::string node = "node" + std::to_string(n);
    hostMem_.push_back(maybeLink(solver, spec.hostMemBps, node + ".hostmem"));
    for (int k = 0; k < nicsPerNode_; ++k) {
      std::string nic = node + ".nic" + std::to_string(k);
      nicTx_.push_back(maybeLink(solver, spec.nicPayloadBps(), nic + ".tx"));
      nicRx_.push_back(maybeLink(solver, spec.nicPayloadBps(), nic + ".rx"));
    }
    for (int g = 0; g < gpusPerNode_; ++g) {
      std::string p = node + ".gpu" + std::to_string(g);
      GpuLinks l;
      l.nvTx = maybeLink(solver, spec.nvlinkBps, p + ".nvlink.tx");
      l.nvRx = maybeLink(solver, spec.nvlinkBps, p + ".nvlink.rx");
      l.h2d = maybeLink(solver, spec.pcieH2DBps, p + ".pcie.h2d");
      l.d2h = maybeLink(solver, spec.pcieD2HBps, p + ".pcie.d2h");
      l.hbm = maybeLink(solver, spec.hbmBps, p + ".hbm");
      gpu_.push_back(l);
    }
  }
  if (nodesPerLeaf_ > 0) {
    int leaves = (nodes + nodesPerLeaf_ - 1) / nodesPerLeaf_;
    double over = std::max(1.0, spec.fabric.oversubscription);
    double cap = nodesPerLeaf_ * nicsPerNode_ * spec.nicPayloadBps() / over;
    for (int l = 0; l < leaves; ++l) {
      leafUp_.push_back(solver.addLink(cap, "leaf" + std::to_string(l) + ".up"));
      leafDown_.push_back(solver.addLink(cap, "leaf" + std::to_string(l) + ".down"));
    }
  }
}

int Topology::nicIndex(int g) const {
  int local = g % gpusPerNode_;
  return nodeOf(g) * nicsPerNode_ + local * nicsPerNode_ / gpusPerNode_;
}

void Topology::appendPath(int a, int b, std::vector<LinkId>& out) const {
  appendLinks(a, b, false, out);
}

void Topology::appendRdmaPath(int a, int b, std::vector<LinkId>& out) const {
  appendLinks(a, b, true, out);
}

void Topology::appendLinks(int a, int b, bool viaNic, std::vector<LinkId>& out) const {
  if (a == b) return;
  size_t from = out.size();
  if (!viaNic && nodeOf(a) == nodeOf(b)) {
    out.push_back(gpu_[a].nvTx);
    out.push_back(gpu_[b].nvRx);
  } else {
    out.push_back(nicTx(a));
    if (nodesPerLeaf_ > 0) {
      int la = nodeOf(a) / nodesPerLeaf_, lb = nodeOf(b) / nodesPerLeaf_;
      if (la != lb) {
        out.push_back(leafUp_[la]);
        out.push_back(leafDown_[lb]);
      }
    }
    out.push_back(nicRx(b));
  }
  out.erase(std::remove(out.begin() + from, out.end(), kNoLink), out.end());
}

std::vector<LinkId> Topology::path(int a, int b) const {
  std::vector<LinkId> p;
  appendPath(a, b, p);
  return p;
}

double Topology::latency(int a, int b) const {
  if (a == b) return 0;
  // NVLink hops are sub-microsecond: below this model's resolution.
  return nodeOf(a) == nodeOf(b) ? 0.0 : latency_;
}

double Topology::hopCapacity(int a, int b) const {
  double cap = 0;
  bool first = true;
  for (LinkId l : path(a, b)) {
    if (l == kNoLink) continue;
    cap = first ? solver_.capacity(l) : std::min(cap, solver_.capacity(l));
    first = false;
  }
  return cap;
}

}  // namespace tide::sim
