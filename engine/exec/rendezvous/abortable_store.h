#pragma once
// A Store whose blocking gets end early once a supervisor has published an
// abort key (the soak driver, when a rank of the epoch died or failed): the
// ranks still waiting at a barrier for a dead peer leave in a fraction of a
// second instead of sitting out their whole timeout. A get waits in slices
// and checks the abort key between them; aborted() is the same check for
// loops that wait on something else (the executor's transfer loop).

#include <mutex>
#include <string>

#include "engine/core/kv_store.h"

namespace tide::exec {

class AbortableStore final : public Store {
 public:
  // `inner` carries the keys, `control` the abort key; both outlive this.
  AbortableStore(Store& inner, Store& control, std::string abortKey, double sliceSeconds = 0.2);

  Status set(const std::string& key, const std::string& value) override {
    return inner_.set(key, value);
  }
  // kCancelled, with the supervisor's reason, once the abort key exists.
  Result<std::string> get(const std::string& key, double timeoutSeconds) override;
  Result<int64_t> add(const std::string& key, int64_t delta) override {
    return inner_.add(key, delta);
  }
  Status erase(const std::string& key) override { return inner_.erase(key); }

  // Whether the abort key exists; asks the control store at most once a
  // slice, so that a busy loop may call it every round.
  bool aborted();
  Status abortedStatus();

 private:
  Store& inner_;
  Store& control_;
  const std::string abortKey_;
  const double slice_;
  std::mutex mu_;
  double lastCheck_ = 0;
  bool aborted_ = false;
  std::string reason_;
};

}  // namespace tide::exec
