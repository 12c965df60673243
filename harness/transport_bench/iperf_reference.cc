#include "harness/transport_bench/iperf_reference.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "engine/core/clock.h"
#include "engine/core/errno_status.h"
#include "engine/core/fd.h"
#include "engine/core/socket_io.h"

extern char** environ;

namespace tide::harness {
namespace {

// A child process that is killed (and reaped) if still running at scope exit.
class Child {
 public:
  Child() = default;
  explicit Child(pid_t pid) : pid_(pid) {}
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  // Exit code, or -1 after the timeout (the child is then killed).
  int wait(double timeoutSeconds) {
    Deadline d = Deadline::after(timeoutSeconds);
    while (pid_ > 0) {
      int st = 0;
      if (::waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      }
      if (d.expired()) return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }

 private:
  pid_t pid_ = -1;
};

// Starts argv with stdout to `outFd` (or /dev/null when -1) and stderr to /dev/null.
Result<pid_t> spawn(const std::vector<std::string>& args, int outFd) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  if (outFd >= 0)
    posix_spawn_file_actions_adddup2(&fa, outFd, 1);
  else
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0)
    return TIDE_ERROR(Code::kUnavailable, "cannot start " + args[0] + ": " + std::strerror(rc));
  return pid;
}

std::string readAllFd(int fd, double timeoutSeconds) {
  std::string out;
  Deadline d = Deadline::after(timeoutSeconds);
  char buf[65536];
  while (!d.expired()) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

}  // namespace

std::string findIperf3() {
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    std::string cand = p.substr(start, end - start) + "/iperf3";
    if (end > start && ::access(cand.c_str(), X_OK) == 0) return cand;
    start = end + 1;
  }
  return "";
}

Result<IperfRun> runIperf3(const std::string& iperf3, uint64_t bytes, int streams,
                           double timeoutSeconds) {
  int port = 0;
  {
    TIDE_ASSIGN_OR_RETURN(UniqueFd probe, listenTcp("127.0.0.1", 0, 1));
    port = boundPort(probe.get());
  }
  const std::string ps = std::to_string(port);
  TIDE_ASSIGN_OR_RETURN(pid_t spid, spawn({iperf3, "-s", "-1", "-p", ps, "-B", "127.0.0.1"}, -1));
  Child server(spid);
  Deadline deadline = Deadline::after(timeoutSeconds);
  std::string lastError = "no attempt";
  while (!deadline.expired()) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return TIDE_ERRNO("pipe");
    UniqueFd r(fds[0]), w(fds[1]);
    TIDE_ASSIGN_OR_RETURN(
        pid_t cpid, spawn({iperf3, "-c", "127.0.0.1", "-p", ps, "-n", std::to_string(bytes), "-P",
                           std::to_string(streams), "-J"},
                          w.get()));
    Child client(cpid);
    w.reset();
    double left = std::chrono::duration<double>(deadline.remaining()).count();
    std::string text = readAllFd(r.get(), left);
    int rc = client.wait(5);
    nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    const nlohmann::json& doc = j;
    if (rc == 0 && doc.is_object() && doc.contains("end") && doc["end"].is_object() &&
        doc["end"].contains("sum_received") && doc["end"]["sum_received"].is_object()) {
      const auto& recv = doc["end"]["sum_received"];
      double got = recv.value("bytes", 0.0), secs = recv.value("seconds", 0.0);
      int streams = 0;
      if (doc.contains("start") && doc["start"].is_object() &&
          doc["start"].contains("test_start") && doc["start"]["test_start"].is_object())
        streams = doc["start"]["test_start"].value("num_streams", 0);
      if (got > 0 && secs > 0) return IperfRun{got / secs / 1e9, streams};
    }
    lastError = doc.is_object() && doc.contains("error") && doc["error"].is_string()
                    ? doc["error"].get<std::string>()
                    : "exit code " + std::to_string(rc) + ", no end.sum_received in its JSON";
    // The server may not listen yet: retry until the deadline.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return TIDE_ERROR(Code::kTimeout, "iperf3 reference did not complete within " +
                                        std::to_string(timeoutSeconds) + " s: " + lastError);
}

}  // namespace tide::harness
