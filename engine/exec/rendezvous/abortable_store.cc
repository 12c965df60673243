#include "engine/exec/rendezvous/abortable_store.h"

#include <algorithm>

#include "engine/core/clock.h"

namespace tide::exec {

AbortableStore::AbortableStore(Store& inner, Store& control, std::string abortKey,
                               double sliceSeconds)
    : inner_(inner), control_(control), abortKey_(std::move(abortKey)), slice_(sliceSeconds) {}

Result<std::string> AbortableStore::get(const std::string& key, double timeoutSeconds) {
  const Deadline deadline = Deadline::after(timeoutSeconds);
  while (true) {
    const double left = std::chrono::duration<double>(deadline.remaining()).count();
    auto r = inner_.get(key, std::min(left, slice_));
    if (r.isOk() || r.status().code() != Code::kTimeout) return r;
    if (aborted()) return abortedStatus().withContext("store key '" + key + "'");
    if (deadline.expired()) {
      return TIDE_ERROR(Code::kTimeout, "store key '" + key + "' did not appear within " +
                                            std::to_string(timeoutSeconds) + " s");
    }
  }
}

bool AbortableStore::aborted() {
  std::lock_guard<std::mutex> lock(mu_);
  if (aborted_) return true;
  const double now = nowSeconds();
  if (now - lastCheck_ < slice_) return false;
  lastCheck_ = now;
  auto r = control_.get(abortKey_, 0);
  if (!r.isOk()) return false;  // absent (or the store is gone: the next wait says so)
  aborted_ = true;
  reason_ = *r;
  return true;
}

Status AbortableStore::abortedStatus() {
  std::lock_guard<std::mutex> lock(mu_);
  return TIDE_ERROR(Code::kCancelled, "aborted by the supervisor: " + reason_);
}

}  // namespace tide::exec
