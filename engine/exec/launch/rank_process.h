#pragma once
// One rank process of a supervised run (the soak driver): started in a
// process group of its own with the given environment, its stdout and
// stderr those of the supervisor. The owner may signal it, see whether it
// still runs, and restart its rank with a new one; the destructor kills
// what is left of it and reaps it, so no rank outlives its owner.

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace tide::exec {

class RankProcess {
 public:
  // argv[0] is looked up in PATH; env is the whole environment ("K=V").
  static Result<std::unique_ptr<RankProcess>> spawn(const std::vector<std::string>& argv,
                                                    const std::vector<std::string>& env);
  ~RankProcess();
  RankProcess(const RankProcess&) = delete;
  RankProcess& operator=(const RankProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Reaps the process when it has exited; false from then on.
  bool running();
  // 128 + signal when it was killed by one; valid once running() is false.
  int exitCode() const { return code_; }
  // To the process (SIGSTOP, SIGCONT); a process already gone is no error.
  Status signal(int sig);
  // SIGKILL to its group and wait for it (bounded: the kernel reaps a
  // killed process promptly; a stopped one is killed too).
  void kill();

 private:
  explicit RankProcess(pid_t pid) : pid_(pid) {}
  pid_t pid_;
  bool running_ = true;
  int code_ = 0;
};

}  // namespace tide::exec
