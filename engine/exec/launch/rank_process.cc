#include "engine/exec/launch/rank_process.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>

#include "engine/core/errno_status.h"

namespace tide::exec {

Result<std::unique_ptr<RankProcess>> RankProcess::spawn(const std::vector<std::string>& argv,
                                                        const std::vector<std::string>& env) {
  if (argv.empty() || argv[0].empty()) {
    return TIDE_ERROR(Code::kInvalidArgument, "rank process: no command");
  }
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int s : {SIGINT, SIGTERM, SIGPIPE}) sigaddset(&defaults, s);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);  // Ctrl-C reaches the supervisor, which stops the ranks
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, args[0], nullptr, &attr, args.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    return TIDE_ERROR(rc == ENOENT ? Code::kNotFound : Code::kInternal,
                      "cannot start '" + argv[0] + "': " + std::strerror(rc));
  }
  return std::unique_ptr<RankProcess>(new RankProcess(pid));
}

RankProcess::~RankProcess() {
  kill();
}

bool RankProcess::running() {
  if (!running_) return false;
  int st = 0;
  const pid_t r = ::waitpid(pid_, &st, WNOHANG);
  if (r == 0) return true;
  running_ = false;
  if (r == pid_) code_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  ::kill(-pid_, SIGKILL);  // anything it left in its group
  return false;
}

Status RankProcess::signal(int sig) {
  if (!running_) return Status::ok();
  if (::kill(pid_, sig) != 0 && errno != ESRCH) return TIDE_ERRNO("kill");
  return Status::ok();
}

void RankProcess::kill() {
  if (!running_) return;
  ::kill(-pid_, SIGKILL);
  ::kill(pid_, SIGKILL);
  int st = 0;
  while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
  }
  running_ = false;
  code_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

}  // namespace tide::exec
