#pragma once
// A Store over a directory, so ranks in separate processes of one test can
// rendezvous without a server: set() renames a finished file into place,
// get() polls, add() holds an flock (for at most 10 s of waiting; a read,
// add(key, 0), takes none).

#include <string>

#include "engine/core/kv_store.h"

namespace tide::transport::testing {

class FileStore final : public Store {
 public:
  explicit FileStore(std::string dir) : dir_(std::move(dir)) {}
  Status set(const std::string& key, const std::string& value) override;
  Result<std::string> get(const std::string& key, double timeoutSeconds) override;
  Result<int64_t> add(const std::string& key, int64_t delta) override;
  Status erase(const std::string& key) override;

 private:
  static constexpr double kLockSeconds = 10;
  std::string path(const std::string& key) const;
  std::string dir_;
};

}  // namespace tide::transport::testing
