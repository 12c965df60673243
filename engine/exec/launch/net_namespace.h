#pragma once
// Network namespaces of the calling thread: setns(2) moves only the thread
// that calls it (and the threads and processes it starts later), so a
// launcher can host its rendezvous store inside an emulated cluster while its
// other threads stay where they were.

#include <string>

#include "engine/core/fd.h"
#include "engine/core/status.h"

namespace tide::exec {

// Moves the calling thread into the named network namespace
// (/run/netns/<name>) for good.
Status enterNamespace(const std::string& name);

// Moves the calling thread into a named namespace and back to the one it was
// in when the scope ends. Sockets keep the namespace they were made in, so a
// store that listens inside the scope is reachable only from inside it.
class NamespaceScope {
 public:
  static Result<NamespaceScope> enter(const std::string& name);
  NamespaceScope(NamespaceScope&&) noexcept = default;
  NamespaceScope& operator=(NamespaceScope&&) = delete;
  NamespaceScope(const NamespaceScope&) = delete;
  NamespaceScope& operator=(const NamespaceScope&) = delete;
  ~NamespaceScope();

 private:
  explicit NamespaceScope(UniqueFd home) : home_(std::move(home)) {}
  UniqueFd home_;  // the namespace to go back to
};

}  // namespace tide::exec
