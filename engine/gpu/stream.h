#pragma once
// A non-blocking CUDA stream and a CUDA event, destroyed on destruction.

#include <cuda_runtime_api.h>

#include "engine/core/status.h"

namespace tide::gpu {

class Stream {
 public:
  static Result<Stream> create();
  Stream() = default;
  ~Stream();
  Stream(Stream&& o) noexcept : s_(o.s_) { o.s_ = nullptr; }
  Stream& operator=(Stream&& o) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  cudaStream_t get() const { return s_; }
  [[nodiscard]] Status synchronize() const;

 private:
  cudaStream_t s_ = nullptr;
};

class Event {
 public:
  // timing = false gives the lighter event that only orders and waits.
  static Result<Event> create(bool timing = false);
  Event() = default;
  ~Event();
  Event(Event&& o) noexcept : e_(o.e_) { o.e_ = nullptr; }
  Event& operator=(Event&& o) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  cudaEvent_t get() const { return e_; }
  [[nodiscard]] Status record(const Stream& s) const;
  [[nodiscard]] Status synchronize() const;
  // Whether the work before the event has finished; never blocks.
  Result<bool> query() const;
  // Milliseconds between two recorded timing events (start.elapsedTo(end)).
  Result<float> elapsedMsTo(const Event& end) const;

 private:
  cudaEvent_t e_ = nullptr;
};

}  // namespace tide::gpu
