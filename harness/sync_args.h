#pragma once
// `tide sync`'s arguments and the run they describe, shared by the plain
// run (cmd_sync.cc) and the soak with faults (sync_chaos.cc).

#include <memory>
#include <string>
#include <vector>

#include "engine/exec/rank/rank_executor.h"
#include "engine/exec/rank/sync_run.h"
#include "engine/plan/lower_bound.h"
#include "engine/transport/registry.h"
#include "harness/option_table.h"
#include "harness/sync_replay.h"
#include "harness/workload_options.h"

namespace tide::harness {

// The environment variable that names an emulated cluster's namespaces.
inline constexpr const char* kNetnsEnv = "TIDE_SYNC_NETNS_PREFIX";
// The environment variable that names an rxe cluster's devices (rdma on an
// emulated cluster: rxe_cluster.h).
inline constexpr const char* kRxeEnv = "TIDE_SYNC_RXE_PREFIX";

// --chaos: a soak with faults; the driver draws the schedule from the seed.
struct ChaosArgs {
  std::string seed;           // empty: no soak
  std::string kinds = "all";  // fault kinds (fault_schedule.h)
  double rate = 0.3;          // chance that an update gets a fault
  double maxBurst = 1.5;      // link bursts and slow ranks last at most this (s)
  int reportEvery = 100;      // a report line every that many updates
  bool verbose = false;       // a line per abandoned update
  bool allowInplace = false;  // tests: updates in place (no rollback), to show a check fails
  bool on() const { return !seed.empty(); }

  template <class Self, class V>
  static void visit(Self& c, V& v) {
    v.group("Soak with faults");
    v.option("--chaos", c.seed,
             "soak: run --steps updates on long-lived rank processes with faults drawn "
             "from this seed (rank kills, link loss and rate-cut bursts, slow ranks, store-node "
             "loss); needs --switch shadow with p2p or store");
    v.option("--chaos-kinds", c.kinds, "kill,link,slow,store-node or all", kShowDefault);
    v.option("--chaos-rate", c.rate, "chance that an update gets a fault", kShowDefault);
    v.option("--chaos-max-burst", c.maxBurst,
             "seconds a link burst or a stopped rank lasts at most", kShowDefault);
    // The driver's own: the ranks neither report nor log.
    v.option("--chaos-report", c.reportEvery, "a report line every N updates",
             kShowDefault | kLocal);
    v.flag("--chaos-verbose", c.verbose, "one line per abandoned update and failed epoch", kLocal);
    // Tests only: updates land in place, so a failed one is not rolled back
    // and the soak's checks must catch the torn shards it leaves.
    v.flag("--chaos-unsafe-inplace", c.allowInplace, "", kHidden);
    v.group("");
  }
};

// The named choices of `tide sync` (option_table.h's Choice).
enum class RankMode { kAuto, kThreads, kProcesses };
inline constexpr Choices<RankMode, 3> kRankModes{{{"auto", RankMode::kAuto},
                                                  {"threads", RankMode::kThreads},
                                                  {"processes", RankMode::kProcesses}}};
enum class SwitchMode { kInplace, kShadow };  // version_switch.h
inline constexpr Choices<SwitchMode, 2> kSwitchModes{
    {{"inplace", SwitchMode::kInplace}, {"shadow", SwitchMode::kShadow}}};
enum class LoseWhen { kRead, kImport };  // --store-lose-when
inline constexpr Choices<LoseWhen, 2> kLoseWhens{
    {{"read", LoseWhen::kRead}, {"import", LoseWhen::kImport}}};
enum class Staging { kPerTensor, kBucketed };
inline constexpr Choices<Staging, 2> kStagings{
    {{"per-tensor", Staging::kPerTensor}, {"bucketed", Staging::kBucketed}}};
// Where --device-memory puts the shards: CUDA, or (tests) host memory
// standing in for the device.
enum class ShardMemoryKind { kCuda, kHost };
inline constexpr Choices<ShardMemoryKind, 2> kShardMemoryKinds{
    {{"cuda", ShardMemoryKind::kCuda}, {"host", ShardMemoryKind::kHost}}};

struct SyncArgs {
  // tide sync's defaults: WorkloadOptions' but the cluster, an emulated one.
  SyncArgs() { workload.cluster = "emulated:nodes=8,gpus=4,nic=200Mbps,nics=1"; }
  WorkloadOptions workload;
  std::string backend = "tcp";
  int steps = 3;
  std::string json;
  std::string trace;     // append events to an existing trace file
  std::string events;    // write events to a new file
  std::string replay;    // a trace whose versions the updates are
  std::string planFile;  // a recorded plan to run (sync_plan_file.h)
  std::string traceOut;  // the units on a timeline (timeline.h)
  RankMode ranks = RankMode::kAuto;
  std::string inferDtype = "bf16";
  double timeout = 120;
  int streams = 4;
  bool poison = false;
  bool worker = false;
  bool sparse = false;   // p2p: delta blocks instead of bytes
  std::string deltaDir;  // disk-delta: shared directory (default: a temporary one)
  int baseEvery = 8;     // disk-delta: a full base every K versions
  // store: nodes, replicas, fragment size, catalog file
  exec::StorePathOptions store;
  std::string storeFragment = "4MiB";
  LoseWhen storeLoseWhen = LoseWhen::kRead;  // the lost node: after the commit, or while importing
  SwitchMode switchMode = SwitchMode::kInplace;
  int joinAtStep = -1;   // store: the last engine joins after this step
  int corruptRank = -1;  // testing: flip a byte of this rank's shard after step 1
  ChaosArgs chaos;       // --chaos: a soak with faults (sync_chaos.h)
  // --device-memory (sync_device.h): shards in device memory, staged.
  bool deviceMemory = false;
  ShardMemoryKind deviceMemoryImpl = ShardMemoryKind::kCuda;
  Staging staging = Staging::kBucketed;
  std::string stagingBucket = "64MiB";
  int stagingStreams = 2;

  // Every option of `tide sync` but --worker, once: registered by
  // addSyncCommand, written back for the ranks by workerArgv (option_table.h).
  template <class Self, class V>
  static void visit(Self& a, V& v) {
    WorkloadOptions::visit(a.workload, v);
    v.option("--plan", a.planFile,
             "run this recorded plan (tide plan --json): the update is the plan's (model, "
             "layouts, strategy, options); the flags say where it runs");
    v.option("--backend", a.backend, "tcp | shm | rdma | nccl", kShowDefault);
    v.option("--steps", a.steps, "weight updates to run", kShowDefault);
    v.option("--json", a.json, "write the result (schema tide.sync/1)");
    v.option("--trace", a.trace, "append transfer events to this trace file");
    v.option("--replay", a.replay,
             "update to the versions of this trace (tide trace gen): its seed, AdamW "
             "settings and routing");
    v.option("--events", a.events, "write transfer events to a new trace file");
    v.option("--trace-out", a.traceOut,
             "write the run's units as a timeline (Chrome trace-event JSON: Perfetto, "
             "chrome://tracing)");
    // Launched ranks are processes already.
    v.choice("--ranks", a.ranks, kRankModes, "how the ranks run", kShowDefault | kLocal);
    v.option("--infer-dtype", a.inferDtype, "bf16 (default) | model", kShowDefault);
    v.option("--timeout", a.timeout, "seconds without progress before a rank fails", kShowDefault);
    v.option("--streams", a.streams, "tcp connections / rdma QPs per peer", kShowDefault);
    v.flag("--poison", a.poison, "start inference shards from a poison pattern");
    v.flag("--sparse", a.sparse, "p2p: send delta blocks (V-1 -> V), applied by the target");
    v.option("--delta-dir", a.deltaDir,
             "disk-delta: shared directory for the files (default: a temporary one)");
    v.option("--base-every", a.baseEvery, "disk-delta: a full base every K versions", kShowDefault);
    v.option("--store-nodes", a.store.nodes,
             "store: store nodes, node n a segment on rank n (0 = one per rank)", kShowDefault);
    v.option("--store-replicas", a.store.replicas, "store: replicas of every fragment",
             kShowDefault);
    v.option("--store-fragment", a.storeFragment, "store: fragment size", kShowDefault);
    v.option("--store-lose-node", a.store.loseNode,
             "store, fault injection: this node's segment is dropped after version 1 is "
             "committed, before it is read");
    v.choice("--store-lose-when", a.storeLoseWhen, kLoseWhens,
             "store, fault injection: the node is lost after the commit (read) or once "
             "version 1 is placed, before the trainers write it (import)",
             kShowDefault);
    v.choice("--switch", a.switchMode, kSwitchModes,
             "inplace: updates land in the live shards; shadow: in a second copy while "
             "emulated generation reads the live one, then a version switch (p2p, store)",
             kShowDefault);
    v.option("--join-engine-at-step", a.joinAtStep,
             "store: the last inference engine joins after this step, pulling the READY "
             "version under a lease");
    v.option("--store-catalog", a.store.catalogJson,
             "store: write the snapshot catalog here after each version (for tide store)");
    v.group("Device memory");
    v.flag("--device-memory", a.deviceMemory,
           "training and inference shards in CUDA device memory: filled on the GPU, staged "
           "D2H into the registered host buffers before the transfer and H2D after it, "
           "verified on the GPU (p2p, broadcast; exit 77 \"skipped: no CUDA device\" "
           "without one)");
    v.choice("--staging", a.staging, kStagings,
             "device memory: per-tensor (a copy and a wait per tensor) or bucketed (merged "
             "copies on --staging-streams streams, an event per bucket)",
             kShowDefault);
    v.option("--staging-bucket", a.stagingBucket, "device memory, bucketed: bytes per bucket",
             kShowDefault);
    v.option("--staging-streams", a.stagingStreams, "device memory, bucketed: CUDA streams",
             kShowDefault);
    // Tests only: "host" runs the device-memory path with host memory as the device.
    v.choice("--device-memory-impl", a.deviceMemoryImpl, kShardMemoryKinds, "", kHidden);
    v.group("");
    ChaosArgs::visit(a.chaos, v);
    v.option("--corrupt-rank", a.corruptRank,
             "testing: flip one byte of this rank's inference shard after the first "
             "update's transfer (verification must then fail the run)");
  }
};

struct Prepared {
  std::unique_ptr<Workload> w;
  plan::TransferPlan plan;
  plan::LowerBound bound;
  bool emulated = false;
  std::string strategy;  // as asked for (disk-delta runs on p2p's plan)
  const sync::StrategyDescriptor* descriptor = nullptr;
  exec::UpdateMode mode = exec::UpdateMode::kFull;
  ReplaySource replay;  // the generator's parameters and routing
};

// Checks the arguments and plans the update (no side effects).
Result<Prepared> prepare(const SyncArgs& a);
exec::RankRunOptions runOptions(const SyncArgs& a, const Prepared& p);
transport::TransportConfig transportConfig(const SyncArgs& a);
// A rank of a run on the emulated cluster (kNetnsEnv set): moves this
// process into its node's namespace and has its connections listen on and
// leave from its GPU's NIC. Does nothing elsewhere.
Status joinEmulatedNode(const Prepared& p, int rank, transport::TransportConfig& c);
// The command line of one rank of a launched run.
std::vector<std::string> workerArgv(const SyncArgs& a);
// What verification must cover: every inference holding of the plan, on
// every step its rank serves (an engine joining after step J serves from J+1).
uint64_t expectedVerifiedBytes(const plan::TransferPlan& plan, const exec::RankRunOptions& o);

}  // namespace tide::harness
