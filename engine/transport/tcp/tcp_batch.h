#pragma once
// A submitted batch: its requests cut into slices, grouped per peer into
// phases, and its completion state.
//
// Ordering: requests to one peer run in submission order as far as anyone
// can observe. Slices of one phase may run in any order over any stream;
// a new phase starts (after the previous one was fully acknowledged) when a
// request conflicts with one already in the phase (overlapping ranges where
// one side writes, remotely or locally) and before every WRITE_WITH_IMM, so
// a notification implies that all earlier data of the batch to that peer is
// in place. Conflict-free requests stream without waiting.

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "engine/core/status.h"
#include "engine/transport/transport.h"

namespace tide::transport::tcp {

class BatchState;

// One message's worth of a request.
struct Slice {
  enum class Kind : uint8_t { kWrite, kRead, kControl };
  Kind kind = Kind::kWrite;
  bool imm = false;
  uint32_t immValue = 0;  // or control tag
  char* local = nullptr;  // write source / read destination
  uint32_t region = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
  uint64_t key = 0;
  std::shared_ptr<BatchState> batch;              // set when dispatched
  uint32_t group = 0;                             // index of the peer group in the batch
  uint32_t request = 0;                           // index in the submitted batch
  std::shared_ptr<std::vector<uint8_t>> payload;  // kControl
};

// A request after local validation: local pointer and remote key resolved.
struct ResolvedRequest {
  Request request;
  char* local = nullptr;
  uint64_t key = 0;
};

class BatchState : public std::enable_shared_from_this<BatchState> {
 public:
  // Plans the requests (all to peers other than this rank) into phases.
  static std::shared_ptr<BatchState> plan(std::span<const ResolvedRequest> requests,
                                          uint64_t sliceBytes);

  size_t groups() const { return groups_.size(); }
  int peerOf(uint32_t group) const { return groups_[group].peer; }
  // Moves out the group's first phase for dispatch.
  std::vector<Slice> start(uint32_t group);
  // Records one slice's outcome; returns the group's next phase to dispatch
  // when this completed the current one (empty otherwise).
  std::vector<Slice> complete(const Slice& slice, const Status& status);
  // Marks the batch failed before dispatch (e.g. a request to this rank).
  void fail(const Status& status);

  bool done();
  Status status();
  // Waits for completion; false on timeout.
  bool waitFor(double seconds);

 private:
  struct Group {
    int peer = -1;
    std::vector<std::vector<Slice>> phases;
    size_t next = 0;      // next phase to dispatch
    size_t inFlight = 0;  // slices of the current phase not yet resolved
    bool failed = false;
  };
  std::vector<Slice> takePhase(Group& g, uint32_t index);
  void groupDone();

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Group> groups_;
  std::vector<Request> requests_;  // for error messages
  size_t groupsLeft_ = 0;
  Status error_;
};

// Text naming a request for error messages: "WRITE of 64 bytes to rank 1 region 2 offset 0".
std::string describeRequest(const Request& r);

}  // namespace tide::transport::tcp
