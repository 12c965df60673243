#include "tests/engine/transport/file_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "engine/core/clock.h"
#include "engine/core/errno_status.h"
#include "engine/core/fd.h"

namespace tide::transport::testing {

std::string FileStore::path(const std::string& key) const {
  std::string name;
  for (unsigned char c : key) {
    char buf[4];
    std::snprintf(buf, sizeof buf, "%02x", c);
    name += buf;
  }
  return dir_ + "/" + name;
}

Status FileStore::set(const std::string& key, const std::string& value) {
  std::string final = path(key);
  std::string tmp = final + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    out << value;
    if (!out) return TIDE_ERROR(Code::kInternal, "cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), final.c_str()) != 0) return TIDE_ERRNO("rename " + tmp);
  return Status::ok();
}

Result<std::string> FileStore::get(const std::string& key, double timeoutSeconds) {
  Deadline deadline = Deadline::after(timeoutSeconds);
  while (true) {
    std::ifstream in(path(key), std::ios::binary);
    if (in) {
      std::ostringstream ss;
      ss << in.rdbuf();
      return ss.str();
    }
    if (deadline.expired()) return TIDE_ERROR(Code::kTimeout, "key '" + key + "' never set");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

Result<int64_t> FileStore::add(const std::string& key, int64_t delta) {
  auto read = [&] {
    int64_t v = 0;
    std::ifstream in(path(key));
    if (in) in >> v;
    return v;
  };
  // A read needs no lock: set() renames a whole file into place.
  if (delta == 0) return read();
  UniqueFd lock(::open((dir_ + "/.lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600));
  if (!lock.valid()) return TIDE_ERRNO("open store lock");
  // Bounded: a rank stopped while it holds the lock (a test SIGSTOPs its
  // child) must not hang the others.
  Deadline deadline = Deadline::after(kLockSeconds);
  while (::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) return TIDE_ERRNO("flock");
    if (deadline.expired())
      return TIDE_ERROR(Code::kTimeout, "store lock in " + dir_ + " held by another rank for " +
                                            std::to_string(static_cast<int>(kLockSeconds)) + " s");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  int64_t value = read() + delta;
  TIDE_RETURN_IF_ERROR(set(key, std::to_string(value)));
  return value;
}

Status FileStore::erase(const std::string& key) {
  if (::unlink(path(key).c_str()) != 0 && errno != ENOENT) return TIDE_ERRNO("unlink " + key);
  return Status::ok();
}

}  // namespace tide::transport::testing
