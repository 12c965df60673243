#pragma once
// The active flows' finish times as an indexed binary min-heap: one entry
// per flow, re-keyed in place when its rate changes. A plain priority queue
// gets a new entry at every rate change and leaves the old one behind; on a
// large component (Kimi-K2 p2p at 4,096 GPUs: 83 k flows, 90 M re-rates in
// 2.3 k solves) that queue grows to tens of millions of stale entries.
// Equal times come out by flow id, so runs repeat exactly.

#include <cstdint>
#include <limits>
#include <vector>

namespace tide::sim {

class FinishHeap {
 public:
  static constexpr uint32_t kAbsent = std::numeric_limits<uint32_t>::max();

  bool empty() const { return heap_.empty(); }
  uint32_t top() const { return heap_.front(); }
  double topTime() const { return time_[heap_.front()]; }

  // Inserts `id` or moves it to time `t`.
  void set(uint32_t id, double t) {
    if (id >= pos_.size()) {
      pos_.resize(id + 1, kAbsent);
      time_.resize(id + 1, 0);
    }
    const double old = time_[id];
    time_[id] = t;
    if (pos_[id] == kAbsent) {
      pos_[id] = static_cast<uint32_t>(heap_.size());
      heap_.push_back(id);
      up(pos_[id]);
    } else if (t < old) {
      up(pos_[id]);
    } else {
      down(pos_[id]);
    }
  }

  void erase(uint32_t id) {
    if (id >= pos_.size() || pos_[id] == kAbsent) return;
    const uint32_t i = pos_[id];
    const uint32_t last = heap_.back();
    heap_.pop_back();
    pos_[id] = kAbsent;
    if (last == id) return;
    heap_[i] = last;
    pos_[last] = i;
    up(i);
    down(pos_[last]);
  }

 private:
  bool less(uint32_t a, uint32_t b) const {
    return time_[a] != time_[b] ? time_[a] < time_[b] : a < b;
  }
  void place(uint32_t i, uint32_t id) {
    heap_[i] = id;
    pos_[id] = i;
  }
  void up(uint32_t i) {
    const uint32_t id = heap_[i];
    while (i > 0) {
      const uint32_t parent = (i - 1) / 2;
      if (!less(id, heap_[parent])) break;
      place(i, heap_[parent]);
      i = parent;
    }
    place(i, id);
  }
  void down(uint32_t i) {
    const uint32_t id = heap_[i];
    const auto n = static_cast<uint32_t>(heap_.size());
    while (true) {
      uint32_t child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && less(heap_[child + 1], heap_[child])) ++child;
      if (!less(heap_[child], id)) break;
      place(i, heap_[child]);
      i = child;
    }
    place(i, id);
  }

  std::vector<uint32_t> heap_;  // flow ids
  std::vector<uint32_t> pos_;   // per flow id: its index in heap_, or kAbsent
  std::vector<double> time_;    // per flow id: its finish time
};

}  // namespace tide::sim
