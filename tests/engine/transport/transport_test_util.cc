#include "tests/engine/transport/transport_test_util.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <sstream>
#include <thread>

#include "engine/core/clock.h"
#include "engine/core/errno_status.h"
#include "tests/fakes/fake_transport.h"

namespace tide::transport::testing {

std::vector<std::string> conformanceBackends() {
  std::vector<std::string> all = compiledBackends();
  all.push_back("fake");
  const char* env = std::getenv("TIDE_CONFORMANCE_BACKENDS");
  if (env == nullptr || *env == '\0') return all;
  std::vector<std::string> out;
  std::stringstream ss(env);
  for (std::string name; std::getline(ss, name, ',');)
    for (const auto& b : all)
      if (b == name) out.push_back(b);
  return out;
}

Result<World> makeWorld(const std::string& backend, int size,
                        const std::function<void(TransportConfig&)>& tweak) {
  World w;
  if (backend == "fake") {
    w.ranks = fakes::createFakeWorld(size);
    return w;
  }
  w.ranks.resize(size);
  std::vector<Status> errors(size);
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      TransportConfig c;
      c.backend = backend;
      c.rank = r;
      c.worldSize = size;
      c.store = w.store.get();
      c.connectTimeoutSeconds = 20;
      c.opTimeoutSeconds = 10;
      if (const char* d = std::getenv("TIDE_CONFORMANCE_DEVICES"); d && *d) {
        std::stringstream ss(d);
        for (std::string dev; std::getline(ss, dev, ',');) c.devices.push_back(dev);
      }
      // A listen address to break the rendezvous with (conformance_broken_rendezvous).
      if (const char* a = std::getenv("TIDE_CONFORMANCE_LISTEN"); a && *a) c.listenAddress = a;
      if (tweak) tweak(c);
      auto t = createTransport(c);
      if (t.isOk())
        w.ranks[r] = std::move(t).value();
      else
        errors[r] = t.status();
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) TIDE_RETURN_IF_ERROR(e);
  return w;
}

void fillPattern(uint8_t* p, uint64_t n, uint32_t seed) {
  uint64_t x = 0x9E3779B97F4A7C15ull * (seed + 1);
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(p + i, &x, 8);
  }
  for (; i < n; ++i) p[i] = static_cast<uint8_t>(seed * 31 + i);
}

int64_t firstDiff(const uint8_t* a, const uint8_t* b, uint64_t n) {
  if (std::memcmp(a, b, n) == 0) return -1;
  for (uint64_t i = 0; i < n; ++i)
    if (a[i] != b[i]) return static_cast<int64_t>(i);
  return -1;
}

Result<Buffer> makeBuffer(Transport& t, uint64_t size, uint32_t seed) {
  Buffer b;
  b.bytes.resize(size);
  fillPattern(b.bytes.data(), size, seed);
  TIDE_ASSIGN_OR_RETURN(b.region, t.registerRegion(b.bytes.data(), size));
  return b;
}

ScratchDir::ScratchDir(const std::string& name)
    : path_(std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()))) {
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

ScratchDir::~ScratchDir() {
  std::error_code ignored;  // best effort: a test's failure is reported already
  std::filesystem::remove_all(path_, ignored);
}

ChildPeer::~ChildPeer() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (out_ >= 0) ::close(out_);
}

void ChildPeer::signal(int sig) {
  if (pid_ <= 0) return;
  ::kill(pid_, sig);
  if (sig == SIGKILL) {
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
}

Status ChildPeer::spawn(const std::string& storeDir, const std::string& backend, int rank,
                        int world, uint64_t regionBytes) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return TIDE_ERRNO("pipe");
  std::string rankS = std::to_string(rank), worldS = std::to_string(world),
              bytesS = std::to_string(regionBytes);
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) {
    Status err = TIDE_ERRNO("fork");
    ::close(fds[0]);
    ::close(fds[1]);
    return err;
  }
  if (pid_ == 0) {
    // Dies with the spawning thread, even while stopped. (getppid() catches
    // the whole parent having exited before prctl; a spawning thread that
    // ends first is the caller's to avoid: spawn from the test's thread.)
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) ::_exit(126);
    if (::dup2(fds[1], STDOUT_FILENO) < 0) ::_exit(125);
    const char* argv[] = {
        TIDE_TRANSPORT_PEER_PATH, storeDir.c_str(), backend.c_str(), rankS.c_str(),
        worldS.c_str(),           bytesS.c_str(),   nullptr};
    ::execv(argv[0], const_cast<char**>(argv));
    ::_exit(127);
  }
  ::close(fds[1]);
  out_ = fds[0];
  return Status::ok();
}

Status ChildPeer::waitReady(double timeoutSeconds) {
  if (out_ < 0) return TIDE_ERROR(Code::kFailedPrecondition, "transport_peer was not spawned");
  Deadline deadline = Deadline::after(timeoutSeconds);
  std::string got;
  while (got.find("ready\n") == std::string::npos) {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline.remaining()).count();
    if (ms <= 0) return TIDE_ERROR(Code::kTimeout, "transport_peer did not become ready");
    pollfd p{out_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(ms)) <= 0) continue;
    char buf[64];
    ssize_t n = ::read(out_, buf, sizeof buf);
    if (n <= 0) return TIDE_ERROR(Code::kUnavailable, "transport_peer exited before ready");
    got.append(buf, static_cast<size_t>(n));
  }
  return Status::ok();
}

}  // namespace tide::transport::testing
