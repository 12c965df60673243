#include "engine/exec/launch/launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <optional>
#include <random>

#include "engine/core/clock.h"
#include "engine/core/errno_status.h"
#include "engine/core/signal_guard.h"
#include "engine/core/socket_io.h"
#include "engine/exec/rendezvous/tcp_store.h"

extern char** environ;

namespace tide::exec {
namespace {

constexpr int kMaxRanks = 4096;

// Write end for the async-signal handler. Atomic: the handler may run on any
// thread, not the one that set it (a plain int was a data race).
std::atomic<int> gSignalPipe{-1};
static_assert(std::atomic<int>::is_always_lock_free, "used in a signal handler");

void onSignal(int sig) {
  int saved = errno;
  unsigned char s = static_cast<unsigned char>(sig);
  int fd = gSignalPipe.load(std::memory_order_acquire);
  if (fd >= 0) [[maybe_unused]]
    ssize_t n = ::write(fd, &s, 1);
  errno = saved;
}

// The launch's handlers write the signal to `writeFd` (the launcher's
// loop reads it); the old handlers come back when it ends.
class LaunchSignals {
 public:
  explicit LaunchSignals(int writeFd) : pipe_(publish(writeFd)), guard_(onSignal) {}
  ~LaunchSignals() = default;  // guard_ restores the handlers before pipe_ forgets the fd

 private:
  struct Pipe {
    ~Pipe() { gSignalPipe.store(-1, std::memory_order_release); }
  };
  static Pipe publish(int fd) {
    gSignalPipe.store(fd, std::memory_order_release);
    return {};
  }
  Pipe pipe_;
  SignalGuard guard_;
};

std::string randomToken() {
  std::random_device rd;
  std::string t;
  static const char* hex = "0123456789abcdef";
  for (int i = 0; i < 32; ++i) t.push_back(hex[rd() & 15]);
  return t;
}

// Output to our own stdout/stderr: when it is gone there is nothing better to do.
void writeAll(int fd, const std::string& s) {
  (void)sendAll(fd, s);
}

struct Stream {
  UniqueFd fd;
  std::string partial;
  int outFd;
};

struct Rank {
  pid_t pid = -1;
  bool running = false;
  int code = 0;
  Stream out, err;
};

// Forwards complete lines (and, at EOF, the unterminated rest) with a prefix.
bool pump(Stream& s, const std::string& prefix) {
  char buf[65536];
  ssize_t n = ::read(s.fd.get(), buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  if (n <= 0) {
    if (!s.partial.empty()) writeAll(s.outFd, prefix + s.partial + "\n");
    s.partial.clear();
    s.fd.reset();
    return false;
  }
  s.partial.append(buf, static_cast<size_t>(n));
  size_t start = 0, nl;
  std::string out;
  while ((nl = s.partial.find('\n', start)) != std::string::npos) {
    out += prefix;
    out.append(s.partial, start, nl - start + 1);
    start = nl + 1;
  }
  s.partial.erase(0, start);
  if (!out.empty()) writeAll(s.outFd, out);
  return true;
}

std::vector<std::string> buildEnv(const LaunchOptions& o, int rank, int port,
                                  const std::string& token) {
  std::map<std::string, std::string> vars;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) vars[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (auto& [k, v] : o.env) vars[k] = v;
  vars["TIDE_RANK"] = std::to_string(rank);
  vars["TIDE_LOCAL_RANK"] = std::to_string(rank);
  vars["TIDE_WORLD_SIZE"] = std::to_string(o.ranks);
  vars["TIDE_MASTER_ADDR"] = o.masterAddr;
  vars["TIDE_MASTER_PORT"] = std::to_string(port);
  vars["TIDE_RUN_TOKEN"] = token;
  vars["TIDE_STORE_EXTERNAL"] = "1";
  std::vector<std::string> out;
  for (auto& [k, v] : vars) out.push_back(k + "=" + v);
  return out;
}

void signalAll(std::vector<Rank>& ranks, int sig) {
  for (auto& r : ranks)
    if (r.running) ::kill(-r.pid, sig);  // the rank's whole process group
}

}  // namespace

Result<int> launch(const LaunchOptions& o) {
  if (o.ranks < 1 || o.ranks > kMaxRanks)
    return TIDE_ERROR(Code::kInvalidArgument, "number of ranks must be 1.." +
                                                  std::to_string(kMaxRanks) + ", got " +
                                                  std::to_string(o.ranks));
  if (o.command.empty() || o.command[0].empty())
    return TIDE_ERROR(Code::kInvalidArgument, "no command to launch");
  const std::string token = randomToken();
  // The launcher hosts the store: it outlives every rank, so no rank's exit
  // takes the rendezvous down under the others.
  TIDE_ASSIGN_OR_RETURN(auto store, TcpStore::host(o.masterAddr, 0, token));

  int sp[2];
  if (::pipe2(sp, O_CLOEXEC | O_NONBLOCK) != 0) return TIDE_ERRNO("pipe");
  UniqueFd sigRead(sp[0]), sigWrite(sp[1]);
  LaunchSignals guard(sigWrite.get());
  // From here on a signal reaches the pipe; one the caller caught before is
  // put there too, so that it is handled like any other.
  if (o.interrupted && o.interrupted->load()) onSignal(SIGINT);

  std::vector<char*> argv;
  for (auto& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  std::vector<Rank> ranks(o.ranks);
  Status startError;
  for (int i = 0; i < o.ranks && startError.isOk(); ++i) {
    int po[2], pe[2];
    if (::pipe2(po, O_CLOEXEC) != 0 || ::pipe2(pe, O_CLOEXEC) != 0) {
      startError = TIDE_ERRNO("pipe");
      break;
    }
    UniqueFd outW(po[1]), errW(pe[1]);
    ranks[i].out = Stream{UniqueFd(po[0]), "", o.outFd};
    ranks[i].err = Stream{UniqueFd(pe[0]), "", o.errFd};
    auto envStrings = buildEnv(o, i, store->port(), token);
    std::vector<char*> envp;
    for (auto& e : envStrings) envp.push_back(e.data());
    envp.push_back(nullptr);

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, outW.get(), 1);
    posix_spawn_file_actions_adddup2(&fa, errW.get(), 2);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGTERM);
    sigaddset(&defaults, SIGPIPE);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setpgroup(&attr, 0);  // own group: Ctrl-C reaches the launcher only
    posix_spawnattr_setflags(
        &attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t pid = -1;
    int rc = ::posix_spawnp(&pid, argv[0], &fa, &attr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) {
      startError = TIDE_ERROR(rc == ENOENT ? Code::kNotFound : Code::kInternal,
                              "cannot start '" + o.command[0] + "': " + std::strerror(rc));
      break;
    }
    ranks[i].pid = pid;
    ranks[i].running = true;
  }
  if (!startError.isOk()) {
    signalAll(ranks, SIGKILL);
    for (auto& r : ranks)
      if (r.running) ::waitpid(r.pid, nullptr, 0);
    return startError;
  }

  int result = 0;
  bool stopping = false;
  // Not std::optional: GCC's -Wmaybe-uninitialized misfires on it under -O1 (tsan preset).
  bool killPending = false;
  Deadline killAt = Deadline::after(0);
  int live = o.ranks;
  std::optional<Deadline>
      drainUntil;  // after the last exit, bounded wait for grandchildren's pipes
  while (true) {
    std::vector<pollfd> pfds{{sigRead.get(), POLLIN, 0}};
    std::vector<Stream*> streams;
    for (int i = 0; i < o.ranks; ++i)
      for (Stream* s : {&ranks[i].out, &ranks[i].err})
        if (s->fd.valid()) {
          pfds.push_back({s->fd.get(), POLLIN, 0});
          streams.push_back(s);
        }
    if (live == 0 && (streams.empty() || (drainUntil && drainUntil->expired()))) break;
    ::poll(pfds.data(), pfds.size(), 50);
    for (size_t k = 1; k < pfds.size(); ++k) {
      if (pfds[k].revents == 0) continue;
      Stream* s = streams[k - 1];
      int rank = 0;
      for (int i = 0; i < o.ranks; ++i)
        if (s == &ranks[i].out || s == &ranks[i].err) rank = i;
      pump(*s, "[rank " + std::to_string(rank) + "] ");
    }
    if (pfds[0].revents & POLLIN) {
      unsigned char sig = 0;
      while (::read(sigRead.get(), &sig, 1) == 1) {
      }
      if (!stopping) {
        writeAll(o.errFd,
                 "tide launch: interrupted; stopping " + std::to_string(live) + " rank(s)\n");
        result = 130;
        stopping = true;
        signalAll(ranks, SIGINT);
        killAt = Deadline::after(o.killGraceSeconds);
        killPending = true;
      }
    }
    for (int i = 0; i < o.ranks; ++i) {
      Rank& r = ranks[i];
      if (!r.running) continue;
      int status = 0;
      if (::waitpid(r.pid, &status, WNOHANG) != r.pid) continue;
      r.running = false;
      --live;
      r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      ::kill(-r.pid, SIGKILL);  // leftovers of the rank's group
      if (r.code != 0 && !stopping) {
        writeAll(o.errFd, "tide launch: rank " + std::to_string(i) + " exited with code " +
                              std::to_string(r.code) + "; stopping the other ranks\n");
        result = r.code;
        stopping = true;
        signalAll(ranks, SIGTERM);
        killAt = Deadline::after(o.killGraceSeconds);
        killPending = true;
      }
    }
    if (killPending && killAt.expired()) {
      signalAll(ranks, SIGKILL);
      killPending = false;
    }
    if (live == 0 && !drainUntil) drainUntil = Deadline::after(1.0);
  }
  return result;
}

}  // namespace tide::exec
