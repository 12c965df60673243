#include "engine/exec/chaos/fault_schedule.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tide::exec {

namespace {

// SplitMix64: the same numbers everywhere, unlike <random>'s distributions.
class Draw {
 public:
  explicit Draw(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // In [0, 1), 53 bits.
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  int below(int n) { return static_cast<int>(next() % static_cast<uint64_t>(n)); }
  // In [lo, hi], on a grid of `step` (printed schedules stay exact).
  double grid(double lo, double hi, double step) {
    const int steps = std::max(0, static_cast<int>(std::floor((hi - lo) / step + 1e-9)));
    return lo + step * below(steps + 1);
  }

 private:
  uint64_t s_;
};

}  // namespace

const char* faultKindName(FaultKind k) {
  switch (k) {
    case FaultKind::kKillRank:
      return "kill";
    case FaultKind::kLinkBurst:
      return "link";
    case FaultKind::kSlowRank:
      return "slow";
    case FaultKind::kStoreNodeLoss:
      return "store-node";
  }
  return "?";
}

Result<FaultKind> parseFaultKind(std::string_view name) {
  for (FaultKind k : kAllFaultKinds) {
    if (name == faultKindName(k)) return k;
  }
  return TIDE_ERROR(Code::kInvalidArgument, "unknown fault kind '" + std::string(name) +
                                                "' (kill, link, slow, store-node or all)");
}

Result<std::vector<FaultKind>> parseFaultKinds(std::string_view list) {
  std::vector<FaultKind> out;
  if (list == "all")
    return std::vector<FaultKind>(std::begin(kAllFaultKinds), std::end(kAllFaultKinds));
  size_t at = 0;
  while (at <= list.size()) {
    const size_t comma = std::min(list.find(',', at), list.size());
    TIDE_ASSIGN_OR_RETURN(FaultKind k, parseFaultKind(list.substr(at, comma - at)));
    if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
    at = comma + 1;
  }
  return out;
}

std::string Fault::toString() const {
  char buf[160];
  switch (kind) {
    case FaultKind::kKillRank:
      std::snprintf(buf, sizeof buf, "update %d: kill rank %d at %.2f of the transfer", update,
                    target, at);
      break;
    case FaultKind::kLinkBurst:
      std::snprintf(buf, sizeof buf,
                    "update %d: link of node %d loses %.0f %% at %.0f %% of its rate for %.2f s "
                    "from %.2f of the transfer",
                    update, target, lossPercent, ratePercent, seconds, at);
      break;
    case FaultKind::kSlowRank:
      std::snprintf(buf, sizeof buf,
                    "update %d: rank %d stopped for %.2f s at %.2f of the transfer", update, target,
                    seconds, at);
      break;
    case FaultKind::kStoreNodeLoss:
      std::snprintf(buf, sizeof buf, "update %d: store node %d lost %s", update, target,
                    duringImport ? "while importing" : "after the commit");
      break;
  }
  return buf;
}

Result<FaultSchedule> FaultSchedule::generate(uint64_t seed, const ChaosSpace& space) {
  if (space.updates < 1) return TIDE_ERROR(Code::kInvalidArgument, "chaos: no updates to fault");
  if (space.ranks.empty()) return TIDE_ERROR(Code::kInvalidArgument, "chaos: no ranks to fault");
  for (int r : space.killable) {
    if (std::find(space.ranks.begin(), space.ranks.end(), r) == space.ranks.end()) {
      return TIDE_ERROR(Code::kInvalidArgument,
                        "chaos: rank " + std::to_string(r) + " to kill is no rank of the run");
    }
  }
  if (space.kinds.empty()) return TIDE_ERROR(Code::kInvalidArgument, "chaos: no fault kinds");
  if (!(space.rate >= 0 && space.rate <= 1)) {
    return TIDE_ERROR(Code::kInvalidArgument, "chaos: the fault rate must be in [0, 1]");
  }
  if (!(space.maxBurstSeconds >= 0.2)) {
    return TIDE_ERROR(Code::kInvalidArgument, "chaos: bursts must be allowed at least 0.2 s");
  }
  for (FaultKind k : space.kinds) {
    if (k == FaultKind::kStoreNodeLoss && space.storeNodes < 1) {
      return TIDE_ERROR(Code::kInvalidArgument,
                        "chaos: store-node faults need --strategy store (this run has no store)");
    }
    if (k == FaultKind::kLinkBurst && space.nodes < 1) {
      return TIDE_ERROR(Code::kInvalidArgument, "chaos: link faults need emulated nodes");
    }
  }
  FaultSchedule s;
  s.seed_ = seed;
  Draw d(seed);
  for (int u = 1; u <= space.updates; ++u) {
    // Every update draws the same amount, so a schedule's prefix does not
    // depend on how many updates follow it.
    const double hit = d.unit();
    const FaultKind kind = space.kinds[d.below(static_cast<int>(space.kinds.size()))];
    const uint64_t params = d.next();  // the fault's own draws
    if (hit >= space.rate) continue;
    Fault f;
    f.update = u;
    f.kind = kind;
    Draw p(params);
    f.at = p.grid(0.05, 0.9, 0.01);
    switch (kind) {
      case FaultKind::kKillRank: {
        const auto& pool = space.killable.empty() ? space.ranks : space.killable;
        f.target = pool[p.below(static_cast<int>(pool.size()))];
        break;
      }
      case FaultKind::kSlowRank:
        f.target = space.ranks[p.below(static_cast<int>(space.ranks.size()))];
        f.seconds = p.grid(0.2, space.maxBurstSeconds, 0.01);
        break;
      case FaultKind::kLinkBurst:
        f.target = p.below(space.nodes);
        f.seconds = p.grid(0.2, space.maxBurstSeconds, 0.01);
        f.lossPercent = p.grid(1, std::max(1.0, space.maxLossPercent), 1);
        f.ratePercent = p.grid(std::clamp(space.minRatePercent, 1.0, 100.0), 100, 1);
        break;
      case FaultKind::kStoreNodeLoss:
        f.target = p.below(space.storeNodes);
        f.duringImport = p.below(2) == 1;
        f.at = 0;  // the store path loses the node at a protocol point, not at a time
        break;
    }
    s.byUpdate_[u] = s.faults_.size();
    s.faults_.push_back(f);
  }
  return s;
}

const Fault* FaultSchedule::forUpdate(int update) const {
  auto it = byUpdate_.find(update);
  return it == byUpdate_.end() ? nullptr : &faults_[it->second];
}

const Fault* FaultSchedule::nextStoreLoss(int update) const {
  for (auto it = byUpdate_.lower_bound(update); it != byUpdate_.end(); ++it) {
    if (faults_[it->second].kind == FaultKind::kStoreNodeLoss) return &faults_[it->second];
  }
  return nullptr;
}

std::map<FaultKind, int> FaultSchedule::counts() const {
  std::map<FaultKind, int> c;
  for (const Fault& f : faults_) ++c[f.kind];
  return c;
}

}  // namespace tide::exec
