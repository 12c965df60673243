#pragma once
// Monotonic clock in seconds and a deadline helper used by every bounded wait.

#include <chrono>

namespace tide {

using Clock = std::chrono::steady_clock;
using Duration = std::chrono::nanoseconds;

inline double nowSeconds() {
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

class Stopwatch {
 public:
  Stopwatch() : start_(Clock::now()) {}
  void reset() { start_ = Clock::now(); }
  double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

 private:
  Clock::time_point start_;
};

class Deadline {
 public:
  explicit Deadline(Duration d) : end_(Clock::now() + d) {}
  static Deadline after(double seconds) {
    return Deadline(std::chrono::duration_cast<Duration>(std::chrono::duration<double>(seconds)));
  }
  bool expired() const { return Clock::now() >= end_; }
  Duration remaining() const {
    auto r = end_ - Clock::now();
    return r.count() > 0 ? std::chrono::duration_cast<Duration>(r) : Duration::zero();
  }
  Clock::time_point when() const { return end_; }

 private:
  Clock::time_point end_;
};

}  // namespace tide
