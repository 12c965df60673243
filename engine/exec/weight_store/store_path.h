#pragma once
// The weight-store strategy on the real executor. Store nodes are memory
// segments contributed by ranks of the run (node n is a segment registered
// by rank n, as a store process on each host contributes DRAM); the bytes
// move with one-sided WRITE and READ over the run's transport. The plan is
// p2p's: it says which runs of which trainer slice every inference rank
// needs, so a reader fetches exactly those runs, from the store instead of
// the trainer. Per version V:
//
//   trainers     convert their shard into their slice (the plan's local
//                tasks), hash each fragment (a chunk of <= fragmentBytes of
//                a slice) and each out-group (the runs one inference rank
//                needs), and report the hashes;
//   coordinator  (rank 0, owner of the SnapshotCatalog) places every
//                fragment on R distinct live nodes and publishes the placement;
//   trainers     WRITE each fragment to its R replicas;
//   coordinator  marks the replicas stored and commits V: the manifest
//                (fragment sizes and hashes, with its own content hash),
//                the placement and the group hashes are published last;
//   readers      check the manifest hash, READ their runs into a shadow of
//                their shard, from the first replica whose node answers (a
//                node that fails is skipped from then on and reported),
//                check every group's hash, and only then copy the shadow
//                into the shard: a torn or corrupted fragment fails the
//                update with kDataLoss and leaves the shard on V-1;
//   coordinator  marks reported nodes lost (the snapshot goes DEGRADED),
//                copies the missing replicas to live nodes (READY again),
//                moves the readers' leases from V-1 to V and collects
//                versions nobody holds, freeing their segment space.
//
// Version 0 is imported during setup and every reader loads it from the
// store, as a new engine joining a running job would.

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "engine/core/kv_store.h"
#include "engine/exec/executor/rank_layout.h"
#include "engine/exec/executor/rank_schedule.h"
#include "engine/exec/weight_store/store_coordinator.h"
#include "engine/transport/registration.h"
#include "engine/transport/transport.h"

namespace tide::exec {

struct StorePathOptions {
  uint32_t nodes = 0;  // store nodes (node n on rank n); 0 = one per rank
  uint32_t replicas = 2;
  uint64_t fragmentBytes = 4 << 20;
  uint64_t segmentBytes = 0;  // per node; 0 = room for three versions
  double timeoutSeconds = 120;
  // Fault injection (tests, `tide sync --store-lose-node`): after version
  // `loseStep` is committed and before it is read, node `loseNode`'s host
  // drops its segment, as a store process that died would.
  int loseNode = -1;
  int loseStep = 0;
  // ... or once version `loseStep` is placed, before the trainers write it:
  // the import is placed again without the node (store_coordinator.h).
  bool loseDuringImport = false;
  // Readers READ straight into buffers[kInfer] (registered as the region
  // given by readInto()) instead of a staging shadow of their own: for a
  // shard that is already a shadow (the version switch).
  bool readIntoShard = false;
  std::string catalogJson;  // coordinator: the catalog after each version goes here
  // Elastic join (`tide sync --join-engine-at-step`): these inference ranks
  // start empty and sit out versions 0..joinStep; the coordinator then
  // leases them the READY version and they pull it (join()) while the
  // others go on with the next update, in which they take part.
  int joinStep = -1;
  std::vector<int> joinRanks;
};

struct StoreCounters {
  uint64_t bytesWritten = 0;  // trainers -> store, every replica
  uint64_t sliceBytes = 0;    // one copy of the trainer's slice
  uint64_t bytesRead = 0;     // store -> this reader
  uint32_t failovers = 0;     // nodes this reader found gone and read around
};

class StorePath {
 public:
  using Buffers = std::array<uint8_t*, kSpaceCount>;
  using RegionIds = std::array<uint32_t, kSpaceCount>;

  // `localIds`: the executor's registered space regions (a trainer's slice
  // is written from its region). Registers this rank's segment (if it hosts
  // a node) and the reader's shadow; imports every node's segment.
  static Result<std::unique_ptr<StorePath>> create(const plan::TransferPlan& plan,
                                                   const std::vector<RankLayout>& layouts,
                                                   const RankSchedule& schedule,
                                                   transport::Transport& transport, Store& store,
                                                   const RegionIds& localIds,
                                                   StorePathOptions options);
  ~StorePath();
  StorePath(const StorePath&) = delete;
  StorePath& operator=(const StorePath&) = delete;

  // This rank's part of version `version` (a trainer's shard holds it
  // already). On error an inference shard still holds its previous version.
  Status step(uint64_t version, const Buffers& buffers, StoreCounters& counters);

  // A joining rank, at its first update: waits for the lease the
  // coordinator grants on the current READY version and reads its shard of
  // it into buffers[kInfer], checked like an update. Returns the version.
  Result<uint64_t> join(const Buffers& buffers, StoreCounters& counters);
  // Whether `rank` reads version `version` (joining ranks skip the early ones).
  bool reads(int rank, uint64_t version) const;
  bool joinsAt(uint64_t version) const {
    return isJoiner(rank_) && static_cast<int64_t>(version) == options_.joinStep + 1;
  }

  // readIntoShard: the region of the buffers[kInfer] the next reads go to.
  void readInto(uint32_t region) {
    shardRegion_ = region;
    hasShardRegion_ = true;
  }
  uint64_t shadowBytes() const { return shadowBytes_; }
  uint64_t segmentBytes() const { return options_.segmentBytes; }

 private:
  struct Piece {  // one read: part of a fragment -> shadow offset
    uint32_t fragment = 0;
    uint64_t fragOffset = 0;
    uint64_t dstOffset = 0;
    uint64_t bytes = 0;
  };
  struct Unit {  // an incoming group: its runs in the shard, for the group hash
    int src = -1;
    uint32_t unit = 0;
    std::vector<Run> runs;
  };

  StorePath(transport::Transport& transport, Store& store, StorePathOptions options)
      : transport_(transport), store_(store), options_(std::move(options)) {}
  Status setupSegments();
  Status publishHashes(uint64_t version, const Buffers& buffers);
  Status importVersion(uint64_t version, StoreCounters& counters);
  Status writeAttempt(uint64_t version, uint32_t attempt, StoreCounters& counters,
                      std::set<uint32_t>& failed);
  Status copyLocal(const std::vector<transport::Request>& reqs);
  Status readStep(uint64_t version, const Buffers& buffers, StoreCounters& counters);
  // Reads and checks this rank's runs of `version`, then copies them into
  // the shard; returns the nodes found gone that were not reported yet.
  Result<std::vector<uint32_t>> readVersion(uint64_t version, const Buffers& buffers,
                                            StoreCounters& counters);
  bool isJoiner(int rank) const;
  Status dropSegmentIfAsked(uint64_t version);
  Status runOnNodes(std::vector<transport::Request>& reqs, std::set<uint32_t>* failedNodes);
  Result<uint32_t> nodeOfRequest(const transport::Request& r) const;

  transport::Transport& transport_;
  Store& store_;
  StorePathOptions options_;
  int rank_ = 0;
  StoreLayout layout_;
  std::unique_ptr<StoreCoordinator> coordinator_;  // rank 0

  // Hosted node segment.
  transport::Registration segment_;  // released when the node is dropped (fault injection)
  std::vector<uint32_t> segIds_;     // node -> imported region id

  // Trainer side.
  int writer_ = -1;
  plan::Space sliceSpace_ = plan::Space::kTrain;
  uint32_t sliceRegion_ = 0;
  std::vector<const OutGroup*> outGroups_;
  std::vector<LocalTask> localTasks_;

  // Reader side.
  std::vector<Piece> pieces_;
  std::vector<Unit> units_;
  transport::Registration shadow_;
  uint64_t shadowBytes_ = 0;
  uint32_t shardRegion_ = 0;  // readIntoShard
  bool hasShardRegion_ = false;
  std::set<uint32_t> down_;                 // nodes this reader found gone
  std::set<uint32_t> reported_;             // of those, the ones already reported
  std::map<uint32_t, uint8_t*> localBase_;  // local region id -> memory (copies to self)
};

}  // namespace tide::exec
