#include "harness/reproduce/runner.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "engine/core/clock.h"

namespace tide::harness::reproduce {

namespace {

std::string tail(const std::string& path, size_t maxBytes) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  if (s.size() > maxBytes) s = "..." + s.substr(s.size() - maxBytes);
  return s;
}

// The last non-empty line of the output (the reason of a failure or skip).
std::string lastLine(const std::string& text) {
  size_t end = text.find_last_not_of("\n\r ");
  if (end == std::string::npos) return "";
  size_t begin = text.rfind('\n', end);
  return text.substr(begin == std::string::npos ? 0 : begin + 1,
                     end - (begin == std::string::npos ? 0 : begin + 1) + 1);
}

}  // namespace

PartResult runPart(const Part& part, const std::string& logPath) {
  PartResult r;
  Stopwatch sw;
  std::vector<char*> args;
  for (const auto& a : part.argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    r.status = "failed";
    r.reason = "fork failed";
    return r;
  }
  if (pid == 0) {
    setpgid(0, 0);  // one group: a timeout ends the part's own children too
    int fd = open(logPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    execvp(args[0], args.data());
    std::fprintf(stderr, "cannot run %s\n", args[0]);
    _exit(127);
  }
  setpgid(pid, pid);
  int status = 0;
  bool timedOut = false;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(part.timeoutSeconds);
  for (;;) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0) break;
    if (!timedOut && std::chrono::steady_clock::now() > deadline) {
      timedOut = true;
      kill(-pid, SIGTERM);
      deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    } else if (timedOut && std::chrono::steady_clock::now() > deadline) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  r.seconds = sw.seconds();
  r.outputTail = tail(logPath, 4000);
  r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (timedOut) {
    r.status = "failed";
    r.reason = "timed out after " + std::to_string(part.timeoutSeconds) + " s";
  } else if (r.exitCode == 0) {
    r.status = "ok";
  } else if (r.exitCode == 77 || lastLine(r.outputTail).find("skipped") != std::string::npos) {
    // 77 (the automake convention) or a "skipped: <reason>" line: cannot run here.
    r.status = "skipped";
    r.reason = lastLine(r.outputTail);
  } else {
    r.status = "failed";
    r.reason = "exit " + std::to_string(r.exitCode) + ": " + lastLine(r.outputTail);
  }
  return r;
}

}  // namespace tide::harness::reproduce
