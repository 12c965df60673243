#include "engine/gpu/stream.h"

#include "engine/gpu/cuda_status.h"

namespace tide::gpu {

Result<Stream> Stream::create() {
  Stream s;
  TIDE_RETURN_IF_ERROR(
      cudaCheck(cudaStreamCreateWithFlags(&s.s_, cudaStreamNonBlocking), "cudaStreamCreate"));
  return s;
}

Stream::~Stream() {
  if (s_) (void)cudaStreamDestroy(s_);
}

Stream& Stream::operator=(Stream&& o) noexcept {
  if (this != &o) {
    if (s_) (void)cudaStreamDestroy(s_);
    s_ = o.s_;
    o.s_ = nullptr;
  }
  return *this;
}

Status Stream::synchronize() const {
  return cudaCheck(cudaStreamSynchronize(s_), "cudaStreamSynchronize");
}

Result<Event> Event::create(bool timing) {
  Event e;
  TIDE_RETURN_IF_ERROR(
      cudaCheck(cudaEventCreateWithFlags(&e.e_, timing ? cudaEventDefault : cudaEventDisableTiming),
                "cudaEventCreate"));
  return e;
}

Event::~Event() {
  if (e_) (void)cudaEventDestroy(e_);
}

Event& Event::operator=(Event&& o) noexcept {
  if (this != &o) {
    if (e_) (void)cudaEventDestroy(e_);
    e_ = o.e_;
    o.e_ = nullptr;
  }
  return *this;
}

Status Event::record(const Stream& s) const {
  return cudaCheck(cudaEventRecord(e_, s.get()), "cudaEventRecord");
}

Status Event::synchronize() const {
  return cudaCheck(cudaEventSynchronize(e_), "cudaEventSynchronize");
}

Result<bool> Event::query() const {
  const cudaError_t e = cudaEventQuery(e_);
  if (e == cudaErrorNotReady) return false;
  TIDE_RETURN_IF_ERROR(cudaCheck(e, "cudaEventQuery"));
  return true;
}

Result<float> Event::elapsedMsTo(const Event& end) const {
  float ms = 0;
  TIDE_RETURN_IF_ERROR(cudaCheck(cudaEventElapsedTime(&ms, e_, end.e_), "cudaEventElapsedTime"));
  return ms;
}

}  // namespace tide::gpu
