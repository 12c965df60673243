#pragma once
// The RdmaTransport class. Set-up, regions and the control channel live in
// rdma_transport.cc; submit, completion handling and waiting in data_path.cc.

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/core/clock.h"
#include "engine/transport/rdma/channel.h"
#include "engine/transport/rdma/cm_connector.h"
#include "engine/transport/rdma/completion.h"
#include "engine/transport/rdma/device.h"
#include "engine/transport/rdma/qp_connector.h"
#include "engine/transport/rdma/rdma_transport.h"
#include "engine/transport/rdma/region_registry.h"
#include "engine/transport/store_mailbox.h"

namespace tide::transport::rdma {

struct RdmaOptions {
  DeviceOptions device;
  bool useCm = false;
  PollMode poll = PollMode::kBusy;
  QpParams qp;
  uint64_t sliceMin = 64 << 10;
  uint64_t sliceMax = 1 << 20;
  int maxAttempts = 3;
  std::string keyPrefix = "rdma/";
};

Result<RdmaOptions> parseRdmaOptions(const TransportConfig& config);

class RdmaTransport final : public Transport {
 public:
  static Result<std::unique_ptr<RdmaTransport>> create(const TransportConfig& config);
  ~RdmaTransport() override;

  Capabilities capabilities() const override;
  int rank() const override { return rank_; }
  int worldSize() const override { return worldSize_; }
  Result<LocalRegion> registerRegion(void* addr, uint64_t size, MemoryKind kind) override;
  Status deregisterRegion(uint32_t id) override;
  Status importRegion(const RemoteRegion& remote) override;
  Result<BatchId> submit(std::span<const Request> requests) override;
  Result<bool> test(BatchId batch) override;
  Status wait(BatchId batch, double timeoutSeconds) override;
  Result<Notification> waitNotification(double timeoutSeconds) override;
  Status send(int peer, uint32_t tag, std::span<const uint8_t> bytes) override;
  Result<std::vector<uint8_t>> recv(int peer, uint32_t tag, double timeoutSeconds) override;

  RdmaStats stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

 private:
  struct Rail {
    std::unique_ptr<Device> device;
    CompletionChannel events;  // event mode only
    CompletionQueue sendCq;
    CompletionQueue recvCq;
  };
  struct Region {
    LocalRegion info;
    std::vector<MemoryRegion> mrs;  // one per rail
    uint64_t inUse = 0;             // slices of unfinished batches
  };
  // Work of one batch towards one peer: groups run one after another.
  struct PeerWork {
    int32_t peer = -1;
    std::deque<std::deque<Slice>> groups;  // front() is the current group
    uint64_t inFlight = 0;                 // posted, not yet retired
  };
  struct Batch {
    std::vector<PeerWork> peers;
    uint64_t inFlight = 0;
    Status error;
    Deadline deadline = Deadline::after(0);
    // A remote access error on a verified region: is its owner still alive?
    // The batch finishes once its heartbeat moved or stayed still too long.
    int32_t probePeer = -1;
    int64_t probeBeat = -1;
    Deadline probeDeadline = Deadline::after(0);
    Deadline probeNextRead = Deadline::after(0);
    bool done() const;
  };
  // An imported descriptor and what checking it against its owner found.
  struct Imported {
    RemoteRegion desc;
    RegionVerdict verdict;
  };

  RdmaTransport() = default;
  Status init(const TransportConfig& config);
  Result<QueuePair> makeQp(int rail);

  // Data path (data_path.cc).
  Status progress();
  Result<bool> testLocked(BatchId batch);
  void pollSendCq(Rail& rail);
  void pollRecvCq(Rail& rail);
  void retire(Channel& ch, uint64_t seq, ibv_wc_status status);
  void settle(const Slice& s, bool ok, const Status& why, bool retryable);
  void failBatch(Batch& b, const Status& why);
  void failChannel(size_t index, const std::string& reason);
  void schedule();
  Status postFor(Batch& batch, PeerWork& work);
  void expireBatches();
  bool anyWorkingChannel(int peer) const;
  // Checks a descriptor against its owner's published registration (the
  // local table for this rank itself).
  Result<RegionVerdict> verifyRegion(const RemoteRegion& d);
  // Re-checks an imported region whose owner deregistered something since.
  Status refreshImported(Imported& imp, int64_t ownerEpoch);
  // Explains a remote access error on a region that passed the checks.
  Status explainRemoteAccess(const Slice& s, Status why);
  void resolveProbes();
  // Runs progress until done() is true or the deadline passes (false);
  // releases `lock` while it sleeps or yields.
  Result<bool> waitUntil(std::unique_lock<std::mutex>& lock, const Deadline& deadline,
                         const std::function<bool()>& done);
  // Background progress: posts what did not fit in the send queues and
  // advances batch groups even while the caller is busy elsewhere (e.g.
  // waiting for a peer's notification on the same thread).
  void progressLoop();

  int rank_ = 0;
  int worldSize_ = 1;
  Store* store_ = nullptr;
  double connectTimeout_ = 30;
  double opTimeout_ = 30;
  RdmaOptions opts_;
  ConnectPlan plan_;
  // Member order is teardown order in reverse: CM ids, QPs, MRs, then CQs/PDs.
  std::vector<Rail> rails_;
  std::map<uint32_t, Region> regions_;
  std::vector<Channel> channels_;
  std::unique_ptr<CmConnection> cm_;
  // QP numbers are per device: two rails can hold QPs with the same number,
  // so a completion is looked up by (rail, qp_num).
  std::map<std::pair<int, uint32_t>, size_t> channelByQpn_;
  std::vector<std::vector<size_t>> senders_;  // per peer: sender channel indices
  std::vector<size_t> rr_;                    // per peer: round-robin cursor
  std::unique_ptr<RegionRegistry> registry_;
  std::unique_ptr<StoreMailbox> mailbox_;  // send()/recv(): control messages via the store
  std::map<std::pair<int32_t, uint32_t>, Imported> remotes_;
  std::map<BatchId, Batch> batches_;
  std::deque<Notification> notifications_;
  uint32_t nextRegionId_ = 1;
  BatchId nextBatch_ = 1;
  Status fatal_;  // first error of the progress engine, reported on every call
  RdmaStats stats_;
  mutable std::mutex mu_;  // guards everything above against the progress thread
  bool stop_ = false;
  std::thread progressThread_;
};

}  // namespace tide::transport::rdma
