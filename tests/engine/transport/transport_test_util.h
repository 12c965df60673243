#pragma once
// Helpers shared by the transport tests: a world of ranks as threads of this
// process, registered buffers with patterns, and a rank in a child process.

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/kv_store.h"
#include "engine/transport/registry.h"

namespace tide::transport::testing {

struct World {
  // Ranks hold the store: they go first, also when a world is replaced.
  World() = default;
  World(World&&) = default;
  World& operator=(World&& o) noexcept {
    ranks.clear();
    store = std::move(o.store);
    ranks = std::move(o.ranks);
    return *this;
  }
  std::unique_ptr<MemoryStore> store = std::make_unique<MemoryStore>();
  std::vector<std::unique_ptr<Transport>> ranks;
  Transport& operator[](int r) { return *ranks[r]; }
};

// Backends the conformance suite runs: the compiled ones plus "fake",
// narrowed by TIDE_CONFORMANCE_BACKENDS=a,b when set.
std::vector<std::string> conformanceBackends();

// Connects `size` ranks of `backend` (each created on its own thread).
Result<World> makeWorld(const std::string& backend, int size,
                        const std::function<void(TransportConfig&)>& tweak = {});

// A registered buffer filled with a pattern.
struct Buffer {
  std::vector<uint8_t> bytes;
  LocalRegion region;
};
Result<Buffer> makeBuffer(Transport& t, uint64_t size, uint32_t seed);
void fillPattern(uint8_t* p, uint64_t n, uint32_t seed);
// First index where the two differ, or -1.
int64_t firstDiff(const uint8_t* a, const uint8_t* b, uint64_t n);

// A fresh directory under the system's temp dir (name + "-" + pid), removed
// with everything in it on destruction.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& name);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

// A rank of another process running transport_peer; killed on destruction,
// and by the kernel if the thread that spawned it ends (so call spawn() from
// the test's own thread): a test process that dies or is killed by its
// timeout leaves no peer behind, stopped or not, holding its output open.
class ChildPeer {
 public:
  ChildPeer() = default;
  ChildPeer(const ChildPeer&) = delete;
  ChildPeer& operator=(const ChildPeer&) = delete;
  ~ChildPeer();
  // Starts it; it creates its transport meanwhile, so the caller creates its
  // own and then waits (bounded) until the peer printed "ready".
  Status spawn(const std::string& storeDir, const std::string& backend, int rank, int world,
               uint64_t regionBytes);
  Status waitReady(double timeoutSeconds);
  void signal(int sig);
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
};

}  // namespace tide::transport::testing
