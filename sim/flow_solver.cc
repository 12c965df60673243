#include "sim/flow_solver.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>

namespace tide::sim {

namespace {
// Flows whose finish times agree to this relative precision finish together:
// identical flows then cost one re-solve, not one each.
constexpr double kRelTol = 1e-9;
constexpr double kAbsTol = 1e-12;
}  // namespace

LinkId FlowSolver::addLink(double bytesPerSecond, std::string name) {
  Link l;
  l.capacity = bytesPerSecond;
  l.name = std::move(name);
  links_.push_back(std::move(l));
  return static_cast<LinkId>(links_.size() - 1);
}

FlowId FlowSolver::start(const std::vector<LinkId>& path, double bytes, double now) {
  FlowId id = static_cast<FlowId>(flows_.size());
  Flow f;
  f.path = path;
  // A link listed twice would be charged twice; a chain that re-crosses a
  // switch uplink is modelled as crossing it once.
  std::sort(f.path.begin(), f.path.end());
  f.path.erase(std::unique(f.path.begin(), f.path.end()), f.path.end());
  f.remaining = std::max(0.0, bytes);
  f.updated = now;
  f.active = true;
  f.pos.resize(f.path.size());
  for (size_t i = 0; i < f.path.size(); ++i) {
    Link& l = links_[f.path[i]];
    f.pos[i] = static_cast<uint32_t>(l.flows.size());
    l.flows.push_back(id);
    dirty_.push_back(f.path[i]);
  }
  if (f.path.empty()) {
    // Crosses no shared resource: done as soon as it starts.
    f.rate = kNever;
    finish_.set(id, now);
  }
  flows_.push_back(std::move(f));
  ++active_;
  return id;
}

void FlowSolver::detach(FlowId id) {
  Flow& f = flows_[id];
  for (size_t i = 0; i < f.path.size(); ++i) {
    Link& l = links_[f.path[i]];
    uint32_t p = f.pos[i];
    FlowId moved = l.flows.back();
    l.flows[p] = moved;
    l.flows.pop_back();
    if (moved != id) {
      // A path is sorted and holds each link once (start()): a search, not
      // a scan, finds the link in it. A broadcast chain's path has a link
      // per hop (thousands at scale), and a scan of it at every link of
      // every finishing flow was the bulk of a large simulation.
      Flow& m = flows_[moved];
      auto it = std::lower_bound(m.path.begin(), m.path.end(), f.path[i]);
      m.pos[static_cast<size_t>(it - m.path.begin())] = p;
    }
    dirty_.push_back(f.path[i]);
  }
  f.active = false;
  f.path.clear();
  f.path.shrink_to_fit();
  f.pos.clear();
  f.pos.shrink_to_fit();
  --active_;
}

void FlowSolver::resolve(double now) {
  if (dirty_.empty()) return;
  ++epoch_;
  std::vector<FlowId> comp;
  std::vector<LinkId> compLinks;
  std::vector<LinkId> stack;
  for (LinkId l : dirty_) {
    if (links_[l].mark == epoch_) continue;
    links_[l].mark = epoch_;
    stack.push_back(l);
  }
  dirty_.clear();
  // Breadth of the affected component: flows sharing a link with a touched
  // link, transitively.
  while (!stack.empty()) {
    LinkId l = stack.back();
    stack.pop_back();
    compLinks.push_back(l);
    for (FlowId fid : links_[l].flows) {
      Flow& f = flows_[fid];
      if (f.mark == epoch_) continue;
      f.mark = epoch_;
      comp.push_back(fid);
      for (LinkId nl : f.path) {
        if (links_[nl].mark == epoch_) continue;
        links_[nl].mark = epoch_;
        stack.push_back(nl);
      }
    }
  }
  if (comp.empty()) return;
  for (FlowId fid : comp) {
    Flow& f = flows_[fid];
    f.remaining = std::max(0.0, f.remaining - f.rate * (now - f.updated));
    f.updated = now;
  }
  // A flow whose rate the solve leaves as it was keeps its finish entry: in
  // a large component most rates do not move at a completion, and pushing
  // every flow again would grow the heap by the component at every event.
  before_.resize(comp.size());
  for (size_t i = 0; i < comp.size(); ++i) before_[i] = flows_[comp[i]].rate;
  fill(comp, compLinks);
  for (size_t i = 0; i < comp.size(); ++i) {
    FlowId fid = comp[i];
    Flow& f = flows_[fid];
    if (f.rate == before_[i] && f.remaining > 0) continue;
    double t = f.rate > 0 ? now + f.remaining / f.rate : kNever;
    if (f.remaining <= 0) t = now;
    if (t < kNever) {
      finish_.set(fid, t);
    } else {
      finish_.erase(fid);
    }
  }
  ++solves_;
  solvedFlows_ += comp.size();
}

void FlowSolver::fill(const std::vector<FlowId>& comp, const std::vector<LinkId>& compLinks) {
  struct Share {
    double share;
    LinkId link;
    bool operator>(const Share& o) const { return share > o.share; }
  };
  std::vector<Share> entries;
  entries.reserve(compLinks.size());
  for (LinkId l : compLinks) {
    Link& k = links_[l];
    k.remCap = k.capacity;
    k.unfrozen = static_cast<uint32_t>(k.flows.size());
    if (k.unfrozen > 0) entries.push_back({k.remCap / k.unfrozen, l});
  }
  std::priority_queue<Share, std::vector<Share>, std::greater<>> heap(std::greater<>{},
                                                                      std::move(entries));
  for (FlowId fid : comp) flows_[fid].frozen = false;
  // Progressive filling: the link with the smallest fair share saturates
  // first; its flows are frozen at that share and leave the others. Freezing
  // a flow at the smallest share never lowers another link's share, so a
  // link's entry is only a lower bound: it is re-keyed when it reaches the
  // top, not at every flow that leaves it (which cost a push per flow and
  // link, the bulk of a large solve).
  while (!heap.empty()) {
    Share s = heap.top();
    heap.pop();
    Link& k = links_[s.link];
    if (k.unfrozen == 0) continue;
    double share = std::max(0.0, k.remCap / k.unfrozen);
    if (share > s.share) {
      heap.push({share, s.link});
      continue;
    }
    for (FlowId fid : k.flows) {
      Flow& f = flows_[fid];
      if (f.frozen) continue;
      f.frozen = true;
      f.rate = share;
      for (LinkId pl : f.path) {
        Link& o = links_[pl];
        o.remCap -= share;
        --o.unfrozen;
      }
    }
  }
}

double FlowSolver::nextCompletion() {
  return finish_.empty() ? kNever : finish_.topTime();
}

std::vector<FlowId> FlowSolver::popCompleted(double t) {
  std::vector<FlowId> done;
  double limit = t + std::max(kAbsTol, std::abs(t) * kRelTol);
  while (!finish_.empty() && finish_.topTime() <= limit) {
    const FlowId id = finish_.top();
    finish_.erase(id);
    Flow& f = flows_[id];
    f.remaining = 0;
    f.updated = t;
    detach(id);
    done.push_back(id);
  }
  return done;
}

}  // namespace tide::sim
