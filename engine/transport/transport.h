#pragma once
// The Transport interface: one-sided RDMA semantics over any backend.
//
//  * A rank registers local memory and gets a LocalRegion; its descriptor
//    (RemoteRegion: rank, id, size, base address, access key) is handed to
//    peers out of band (the control channel or the rendezvous store).
//  * A peer imports the descriptor, then submits batches of one-sided WRITE
//    and READ requests against it. The target rank's CPU does not take part
//    in the API: backends without hardware one-sided support (tcp) emulate
//    it with a receiver-side progress thread that checks region, bounds and
//    key before touching memory.
//  * Batches complete as a whole; test()/wait() report the first error of
//    any request in the batch. Requests within one batch to the same peer
//    are executed in submission order (read-after-write holds in a batch).
//  * WRITE_WITH_IMM additionally delivers a 32-bit value to the target, which
//    it receives with waitNotification() once the data is in place.
//  * send()/recv() is a small two-sided control channel (handshakes,
//    barriers, descriptors), ordered per (peer, tag).
//
// A transport is created connected to every peer by transport/registry.h and
// is used from one thread at a time unless a backend documents otherwise.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/transport/host_memory.h"

namespace tide::transport {

enum class MemoryKind : uint8_t { kHost = 0, kCuda = 1 };

struct Capabilities {
  std::string backend;        // "tcp", "shm", "rdma", "nccl"
  bool oneSided = true;       // WRITE/READ without target involvement in the API
  bool read = true;           // supports kRead
  bool writeWithImm = false;  // supports kWriteWithImm + waitNotification
  bool crossHost = false;     // peers may be on other hosts
  bool deviceMemory = false;  // can register MemoryKind::kCuda
  uint32_t devices = 1;       // NICs/devices requests are striped over
  uint64_t maxRegionBytes = UINT64_MAX;
};

// What a peer needs to address a registered region. Plain data, serializable.
struct RemoteRegion {
  int32_t rank = -1;
  uint32_t id = 0;
  uint64_t size = 0;
  uint64_t base = 0;            // target virtual address (rdma) or 0
  uint64_t key = 0;             // access key checked by the target
  std::vector<uint32_t> rkeys;  // per-device remote keys (rdma), else empty

  std::string serialize() const;
  static Result<RemoteRegion> deserialize(const std::string& bytes);
  bool operator==(const RemoteRegion&) const = default;
};

struct LocalRegion {
  uint32_t id = 0;
  void* addr = nullptr;
  uint64_t size = 0;
  MemoryKind kind = MemoryKind::kHost;
  RemoteRegion descriptor;  // hand this to peers
};

enum class Op : uint8_t { kWrite = 0, kRead = 1, kWriteWithImm = 2 };

// kWrite: local[localOffset, +length) -> remote[remoteOffset, +length)
// kRead:  remote[remoteOffset, +length) -> local[localOffset, +length)
struct Request {
  Op op = Op::kWrite;
  uint32_t localRegion = 0;
  uint64_t localOffset = 0;
  int32_t peer = -1;
  uint32_t remoteRegion = 0;  // id from an imported RemoteRegion of `peer`
  uint64_t remoteOffset = 0;
  uint64_t length = 0;
  uint32_t imm = 0;  // kWriteWithImm only
};

using BatchId = uint64_t;

struct Notification {
  int32_t peer = -1;
  uint32_t imm = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;

  virtual Capabilities capabilities() const = 0;
  virtual int rank() const = 0;
  virtual int worldSize() const = 0;

  // Registers [addr, addr+size) for remote access. The memory must outlive
  // the registration. Registration cost is the backend's (pinning for rdma).
  virtual Result<LocalRegion> registerRegion(void* addr, uint64_t size,
                                             MemoryKind kind = MemoryKind::kHost) = 0;
  // After this returns, no remote access touches the memory again.
  virtual Status deregisterRegion(uint32_t id) = 0;

  // Host memory for buffers that will be registered: a backend may allocate
  // it so that its peers reach it faster (shm: a memfd peers map once). Any
  // registerRegion() still accepts any memory. Default: anonymous memory.
  virtual Result<HostMemory> allocateHost(uint64_t size) { return HostMemory::anonymous(size); }

  // Makes a peer's region addressable by (peer, id) in requests.
  virtual Status importRegion(const RemoteRegion& remote) = 0;

  // Validates and starts every request; an invalid request (unknown region,
  // local bounds) fails the call and starts none of them.
  virtual Result<BatchId> submit(std::span<const Request> requests) = 0;
  // true when every request finished; the batch's error if one failed.
  // A finished batch is forgotten after test() returns true or an error.
  virtual Result<bool> test(BatchId batch) = 0;
  // Blocks until the batch finished (its status) or timeout (kTimeout; the
  // batch stays pending and may be waited on again).
  virtual Status wait(BatchId batch, double timeoutSeconds) = 0;

  // Receives the next WRITE_WITH_IMM notification addressed to this rank.
  virtual Result<Notification> waitNotification(double timeoutSeconds) = 0;

  // Two-sided control messages, ordered per (peer, tag).
  virtual Status send(int peer, uint32_t tag, std::span<const uint8_t> bytes) = 0;
  virtual Result<std::vector<uint8_t>> recv(int peer, uint32_t tag, double timeoutSeconds) = 0;
};

}  // namespace tide::transport
