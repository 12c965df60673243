#pragma once
// Key-value store used for rendezvous: ranks publish their addresses and
// region descriptors under string keys and wait for each other's. Two
// implementations: MemoryStore (ranks as threads in one process) and
// exec::TcpStore (ranks as processes, possibly on several hosts).

#include <condition_variable>
#include <map>
#include <mutex>
#include <string>

#include "engine/core/status.h"

namespace tide {

class Store {
 public:
  virtual ~Store() = default;
  virtual Status set(const std::string& key, const std::string& value) = 0;
  // Blocks until the key exists or the timeout passes (kTimeout).
  virtual Result<std::string> get(const std::string& key, double timeoutSeconds) = 0;
  // Atomically adds delta to an integer counter (created at 0) and returns the new value.
  virtual Result<int64_t> add(const std::string& key, int64_t delta) = 0;
  // Removes the key, if it is there: a key read once and done with (a
  // control message) must not stay for the rest of a long run.
  virtual Status erase(const std::string& key) = 0;
};

class MemoryStore final : public Store {
 public:
  Status set(const std::string& key, const std::string& value) override;
  Result<std::string> get(const std::string& key, double timeoutSeconds) override;
  Result<int64_t> add(const std::string& key, int64_t delta) override;
  Status erase(const std::string& key) override;
  size_t size();  // keys held

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::string> values_;
};

// Prefixes every key, so several groups can share one store.
class PrefixStore final : public Store {
 public:
  PrefixStore(Store& inner, std::string prefix) : inner_(inner), prefix_(std::move(prefix)) {}
  Status set(const std::string& key, const std::string& value) override {
    return inner_.set(prefix_ + key, value);
  }
  Result<std::string> get(const std::string& key, double timeoutSeconds) override {
    return inner_.get(prefix_ + key, timeoutSeconds);
  }
  Result<int64_t> add(const std::string& key, int64_t delta) override {
    return inner_.add(prefix_ + key, delta);
  }
  Status erase(const std::string& key) override { return inner_.erase(prefix_ + key); }

 private:
  Store& inner_;
  std::string prefix_;
};

// A store's counter is decimal text. Adds delta to it (`stored`: its text,
// nullptr for a new key) and returns the new value; kInvalidArgument when the
// text is not a counter or the sum would overflow.
Result<int64_t> addToCounter(const std::string* stored, int64_t delta);

// Waits until `count` callers have arrived at barrier `name` (a counter key).
Status storeBarrier(Store& store, const std::string& name, int count, double timeoutSeconds);

// The last store operation of a run, after its last barrier: rank 0 (the
// process that may host the store, e.g. under mpirun, Slurm or torchrun)
// returns once the other `count - 1` ranks have had every answer they asked
// for, so none loses the store in the middle of a reply. Nothing can fail
// here any more: the others ignore errors, rank 0 waits at most
// `timeoutSeconds` and returns false when it gave up.
bool storeDepart(Store& store, const std::string& name, int rank, int count, double timeoutSeconds);

}  // namespace tide
