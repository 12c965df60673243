#include "engine/core/kv_store.h"

#include <chrono>
#include <thread>

#include "engine/core/clock.h"
#include "engine/core/parse.h"

namespace tide {

Status MemoryStore::set(const std::string& key, const std::string& value) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    values_[key] = value;
  }
  cv_.notify_all();
  return Status::ok();
}

Result<std::string> MemoryStore::get(const std::string& key, double timeoutSeconds) {
  std::unique_lock<std::mutex> lock(mu_);
  Deadline deadline = Deadline::after(timeoutSeconds);
  while (true) {
    auto it = values_.find(key);
    if (it != values_.end()) return it->second;
    if (cv_.wait_until(lock, deadline.when()) == std::cv_status::timeout && deadline.expired())
      return TIDE_ERROR(Code::kTimeout, "store key '" + key + "' did not appear within " +
                                            std::to_string(timeoutSeconds) + " s");
  }
}

Result<int64_t> MemoryStore::add(const std::string& key, int64_t delta) {
  int64_t v = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = values_.find(key);
    auto sum = addToCounter(it != values_.end() ? &it->second : nullptr, delta);
    if (!sum.isOk()) return sum.status().withContext("store key '" + key + "'");
    v = *sum;
    values_[key] = std::to_string(v);
  }
  cv_.notify_all();
  return v;
}

Status MemoryStore::erase(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  values_.erase(key);
  return Status::ok();
}

size_t MemoryStore::size() {
  std::lock_guard<std::mutex> lock(mu_);
  return values_.size();
}

Result<int64_t> addToCounter(const std::string* stored, int64_t delta) {
  int64_t v = 0;
  if (stored) {
    TIDE_ASSIGN_OR_RETURN(v, parseSigned(*stored, "store counter"));
  }
  if (__builtin_add_overflow(v, delta, &v))
    return TIDE_ERROR(Code::kInvalidArgument, "store counter would overflow");
  return v;
}

Status storeBarrier(Store& store, const std::string& name, int count, double timeoutSeconds) {
  TIDE_ASSIGN_OR_RETURN(int64_t arrived, store.add(name + "/count", 1));
  if (arrived == count) return store.set(name + "/done", "1");
  if (arrived > count)
    return TIDE_ERROR(Code::kFailedPrecondition,
                      "barrier '" + name + "' reached by more than " + std::to_string(count));
  auto r = store.get(name + "/done", timeoutSeconds);
  if (!r.isOk())
    return r.status().withContext("barrier '" + name + "' (" + std::to_string(arrived) + "/" +
                                  std::to_string(count) + " arrived)");
  return Status::ok();
}

bool storeDepart(Store& store, const std::string& name, int rank, int count,
                 double timeoutSeconds) {
  if (count <= 1) return true;
  if (rank != 0) {
    // The last to leave tells rank 0; a lost reply to it is rank 0 leaving.
    auto left = store.add(name + "/left", 1);
    if (left.isOk() && *left == count - 1) (void)store.set(name + "/gone", "1");
    return true;
  }
  return store.get(name + "/gone", timeoutSeconds).isOk();
}

}  // namespace tide
