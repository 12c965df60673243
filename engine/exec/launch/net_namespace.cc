#include "engine/exec/launch/net_namespace.h"

#include <fcntl.h>
#include <sched.h>

#include <cstring>

#include "engine/core/errno_status.h"
#include "engine/core/log.h"

namespace tide::exec {

Status enterNamespace(const std::string& name) {
  const std::string path = "/run/netns/" + name;
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return TIDE_ERRNO("open " + path);
  if (setns(fd.get(), CLONE_NEWNET) != 0) return TIDE_ERRNO("setns " + path);
  return Status::ok();
}

Result<NamespaceScope> NamespaceScope::enter(const std::string& name) {
  UniqueFd home(open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
  if (!home.valid()) return TIDE_ERRNO("open /proc/thread-self/ns/net");
  TIDE_RETURN_IF_ERROR(enterNamespace(name));
  return NamespaceScope(std::move(home));
}

NamespaceScope::~NamespaceScope() {
  if (home_.valid() && setns(home_.get(), CLONE_NEWNET) != 0) {
    TIDE_LOG_WARN("cannot return to the original network namespace: %s", std::strerror(errno));
  }
}

}  // namespace tide::exec
