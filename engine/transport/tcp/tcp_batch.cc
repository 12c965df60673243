#include "engine/transport/tcp/tcp_batch.h"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <map>
#include <string>

namespace tide::transport::tcp {
namespace {

// Byte ranges per region, merged, with an overlap query.
class RangeSet {
 public:
  bool overlaps(uint32_t region, uint64_t begin, uint64_t end) const {
    if (begin == end) return false;
    auto r = ranges_.find(region);
    if (r == ranges_.end()) return false;
    const auto& m = r->second;
    auto it = m.upper_bound(begin);  // first range starting after begin
    if (it != m.end() && it->first < end) return true;
    if (it == m.begin()) return false;
    --it;
    return it->second > begin;
  }
  void add(uint32_t region, uint64_t begin, uint64_t end) {
    if (begin == end) return;
    auto& m = ranges_[region];
    auto it = m.upper_bound(begin);
    if (it != m.begin() && std::prev(it)->second >= begin) {
      --it;
      begin = it->first;
    }
    while (it != m.end() && it->first <= end) {
      end = std::max(end, it->second);
      it = m.erase(it);
    }
    m.emplace(begin, end);
  }
  void clear() { ranges_.clear(); }

 private:
  std::map<uint32_t, std::map<uint64_t, uint64_t>> ranges_;
};

// The ranges touched by the phase being built for one peer.
struct PhaseRanges {
  RangeSet remoteRead, remoteWritten, localRead, localWritten;
  bool empty = true;
  void clear() {
    remoteRead.clear();
    remoteWritten.clear();
    localRead.clear();
    localWritten.clear();
    empty = true;
  }
};

bool conflicts(const PhaseRanges& p, const Request& r) {
  uint64_t rb = r.remoteOffset, re = r.remoteOffset + r.length;
  uint64_t lb = r.localOffset, le = r.localOffset + r.length;
  if (r.op == Op::kRead)
    return p.remoteWritten.overlaps(r.remoteRegion, rb, re) ||
           p.localRead.overlaps(r.localRegion, lb, le) ||
           p.localWritten.overlaps(r.localRegion, lb, le);
  return p.remoteWritten.overlaps(r.remoteRegion, rb, re) ||
         p.remoteRead.overlaps(r.remoteRegion, rb, re) ||
         p.localWritten.overlaps(r.localRegion, lb, le);
}

void record(PhaseRanges& p, const Request& r) {
  uint64_t rb = r.remoteOffset, re = r.remoteOffset + r.length;
  uint64_t lb = r.localOffset, le = r.localOffset + r.length;
  if (r.op == Op::kRead) {
    p.remoteRead.add(r.remoteRegion, rb, re);
    p.localWritten.add(r.localRegion, lb, le);
  } else {
    p.remoteWritten.add(r.remoteRegion, rb, re);
    p.localRead.add(r.localRegion, lb, le);
  }
  p.empty = false;
}

const char* opName(Op op) {
  switch (op) {
    case Op::kWrite:
      return "WRITE";
    case Op::kRead:
      return "READ";
    case Op::kWriteWithImm:
      return "WRITE_WITH_IMM";
  }
  return "?";
}

}  // namespace

std::string describeRequest(const Request& r) {
  return std::string(opName(r.op)) + " of " + std::to_string(r.length) + " bytes " +
         (r.op == Op::kRead ? "from" : "to") + " rank " + std::to_string(r.peer) + " region " +
         std::to_string(r.remoteRegion) + " offset " + std::to_string(r.remoteOffset);
}

std::shared_ptr<BatchState> BatchState::plan(std::span<const ResolvedRequest> requests,
                                             uint64_t sliceBytes) {
  auto batch = std::make_shared<BatchState>();
  std::map<int, uint32_t> groupOf;
  std::vector<PhaseRanges> ranges;
  for (uint32_t i = 0; i < requests.size(); ++i) {
    const ResolvedRequest& rr = requests[i];
    const Request& r = rr.request;
    auto [it, fresh] = groupOf.emplace(r.peer, static_cast<uint32_t>(batch->groups_.size()));
    if (fresh) {
      batch->groups_.push_back(Group{r.peer, {}, 0, 0, false});
      ranges.emplace_back();
    }
    Group& g = batch->groups_[it->second];
    PhaseRanges& pr = ranges[it->second];
    bool imm = r.op == Op::kWriteWithImm;
    if (g.phases.empty() || (!pr.empty && (imm || conflicts(pr, r)))) {
      g.phases.emplace_back();
      pr.clear();
    }
    Slice base;
    base.kind = r.op == Op::kRead ? Slice::Kind::kRead : Slice::Kind::kWrite;
    base.region = r.remoteRegion;
    base.key = rr.key;
    base.group = it->second;
    base.request = i;
    // A notification must follow every byte of its write: a write that
    // spans several slices sends its immediate in a phase of its own.
    bool split = imm && r.length > sliceBytes;
    uint64_t done = 0;
    do {
      Slice s = base;
      s.offset = r.remoteOffset + done;
      s.local = rr.local + done;
      s.length = std::min(sliceBytes, r.length - done);
      s.imm = imm && !split;
      s.immValue = r.imm;
      g.phases.back().push_back(std::move(s));
      done += g.phases.back().back().length;
    } while (done < r.length);
    record(pr, r);
    if (split) {
      g.phases.emplace_back();
      pr.clear();
      Slice s = base;
      s.offset = r.remoteOffset + r.length;
      s.local = rr.local + r.length;
      s.length = 0;
      s.imm = true;
      s.immValue = r.imm;
      g.phases.back().push_back(std::move(s));
      pr.empty = false;
    }
  }
  batch->requests_.reserve(requests.size());
  for (const auto& rr : requests) batch->requests_.push_back(rr.request);
  batch->groupsLeft_ = batch->groups_.size();
  return batch;
}

std::vector<Slice> BatchState::takePhase(Group& g, uint32_t index) {
  std::vector<Slice> out = std::move(g.phases[g.next]);
  g.phases[g.next].clear();
  g.phases[g.next].shrink_to_fit();
  ++g.next;
  g.inFlight = out.size();
  auto self = shared_from_this();
  for (Slice& s : out) {
    s.batch = self;
    s.group = index;
  }
  return out;
}

std::vector<Slice> BatchState::start(uint32_t group) {
  std::lock_guard lock(mu_);
  return takePhase(groups_[group], group);
}

std::vector<Slice> BatchState::complete(const Slice& slice, const Status& status) {
  std::lock_guard lock(mu_);
  Group& g = groups_[slice.group];
  if (!status.isOk()) {
    g.failed = true;
    if (error_.isOk())
      error_ = status.withContext("request " + std::to_string(slice.request) + " (" +
                                  describeRequest(requests_[slice.request]) + ")");
  }
  if (--g.inFlight > 0) return {};
  // Later phases of a failed group never start, as on a QP in error state.
  if (g.failed || g.next == g.phases.size()) {
    groupDone();
    return {};
  }
  return takePhase(g, slice.group);
}

void BatchState::fail(const Status& status) {
  std::lock_guard lock(mu_);
  if (error_.isOk()) error_ = status;
}

void BatchState::groupDone() {
  if (--groupsLeft_ == 0) cv_.notify_all();
}

bool BatchState::done() {
  std::lock_guard lock(mu_);
  return groupsLeft_ == 0;
}

Status BatchState::status() {
  std::lock_guard lock(mu_);
  return error_;
}

bool BatchState::waitFor(double seconds) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, std::chrono::duration<double>(std::max(0.0, seconds)),
                      [&] { return groupsLeft_ == 0; });
}

}  // namespace tide::transport::tcp
