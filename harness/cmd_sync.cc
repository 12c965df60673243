// `tide sync`: plan a weight update and run it for real, K times, on a
// transport: ranks as threads of this process, as local processes, or as
// processes in the network namespaces of an emulated cluster
// (--cluster emulated:nodes=N,gpus=G,nic=RATE; with --backend rdma, one
// rxe device per node on shaped links instead). Every update is verified
// bit-exact; the JSON reports step times, bytes, the plan's lower bound and
// the ratio to it; --events / --trace write every transfer as a trace event.

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "engine/core/errno_status.h"
#include "engine/core/signal_guard.h"
#include "engine/core/units.h"
#include "engine/exec/launch/emulated_cluster.h"
#include "engine/exec/launch/launcher.h"
#include "engine/exec/launch/net_namespace.h"
#include "engine/exec/launch/rxe_cluster.h"
#include "engine/exec/rendezvous/rank_env.h"
#include "harness/command.h"
#include "harness/run_context.h"
#include "harness/sync_args.h"
#include "harness/sync_chaos.h"
#include "harness/sync_device.h"
#include "harness/sync_rxe.h"
#include "harness/sync_switch_report.h"
#include "harness/sync_work_report.h"
#include "harness/timeline.h"
#include "traces/event_writer.h"

namespace tide::harness {

namespace {

std::atomic<bool> gInterrupted{false};
void onSignal(int) {
  gInterrupted = true;
}

Status writeEvents(const SyncArgs& a, const std::vector<traces::Event>& events) {
  for (const std::string& file : {a.events, a.trace}) {
    if (file.empty()) continue;
    if (&file == &a.events) std::remove(file.c_str());  // a fresh file
    TIDE_ASSIGN_OR_RETURN(auto wr, traces::EventWriter::open(file, 1 << 16));
    for (const auto& e : events) TIDE_RETURN_IF_ERROR(wr->append(e));
    TIDE_RETURN_IF_ERROR(wr->flush());
  }
  return Status::ok();
}

// Every result document carries the run's context (host, load, build).
Status writeJson(const std::string& path, nlohmann::json j) {
  if (path.empty()) return Status::ok();
  j["context"] = runContext();
  std::ofstream out(path);
  out << j.dump(2) << "\n";
  if (!out) return TIDE_ERROR(Code::kUnavailable, "--json " + path + ": cannot write");
  return Status::ok();
}

// rankEnv: for a launched run, whose variables told the ranks who they are
// ("TIDE" from tide launch, "OpenMPI", "Slurm", "torchrun", ...).
Status report(const SyncArgs& a, const Prepared& p, const std::vector<exec::StepStats>& steps,
              const std::string& mode, const exec::ExecReport& extra, const exec::SetupStats& setup,
              const std::vector<traces::Event>& events, const std::string& rankEnv = "") {
  nlohmann::json j;
  j["schema"] = "tide.sync/1";
  j["strategy"] = p.strategy;
  j["backend"] = a.backend;
  j["model"] = p.w->spec.name;
  j["scale"] = a.workload.scale;
  j["train"] = p.w->train.toString();
  j["infer"] = p.w->infer.toString();
  j["infer_dtype"] = workloads::dtypeName(p.w->spec.inferDtype);
  if (!p.replay.path.empty()) j["replay"] = p.replay.path;
  j["cluster"] = p.w->cluster.name;
  j["ranks"] = p.plan.ranks.size();
  j["ranks_as"] = mode;
  if (!rankEnv.empty()) j["rank_env"] = rankEnv;
  j["lower_bound_seconds"] = p.bound.seconds;
  j["bottleneck"] = p.bound.bottleneck.name;
  j["lower_bound"] = p.bound.toJson();
  std::vector<double> secs;
  nlohmann::json arr = nlohmann::json::array();
  uint64_t wire = 0, full = 0, elements = 0, changed = 0;
  for (const auto& s : steps) {
    secs.push_back(s.seconds);
    wire += s.bytes;
    full += s.fullBytes;
    elements += s.elements;
    changed += s.changed;
    arr.push_back({{"step", s.step},
                   {"bytes_on_wire", s.bytes},
                   {"full_bytes", s.fullBytes},
                   {"bytes_read", s.bytesRead},
                   {"changed_fraction", s.elements ? double(s.changed) / s.elements : 1.0},
                   {"compression_ratio", s.bytes ? double(s.fullBytes) / s.bytes : 0.0},
                   {"seconds", s.seconds},
                   {"bytes", s.bytes},
                   {"local_bytes", s.localBytes},
                   {"gbps", s.seconds > 0 ? s.bytes / s.seconds / 1e9 : 0.0},
                   {"verify_seconds", s.verifySeconds},
                   {"verified_bytes", s.verifiedBytes},
                   {"ratio_to_bound", p.bound.ratio(s.seconds)}});
    if (a.deviceMemory) {
      arr.back()["stage_out_seconds"] = s.stageOutSeconds;
      arr.back()["stage_in_seconds"] = s.stageInSeconds;
    }
  }
  std::vector<double> sorted = secs;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  j["steps"] = arr;
  j["median_step_seconds"] = median;
  j["ratio_to_bound"] = p.bound.ratio(median);
  // disk-delta: bytes_on_wire are the bytes written to files.
  j["bytes_on_wire"] = wire;
  j["full_bytes"] = full;
  j["changed_fraction"] = elements ? double(changed) / elements : 1.0;
  j["compression_ratio"] = wire ? double(full) / wire : 0.0;
  if (p.mode != exec::UpdateMode::kFull) {
    j["lower_bound_note"] = "the bound is the full p2p plan's (all bytes over the network)";
  }
  if (p.mode == exec::UpdateMode::kDiskDelta) j["delta_dir"] = a.deltaDir;
  if (p.mode == exec::UpdateMode::kStore) {
    // bytes_on_wire: trainers -> store (every replica); bytes_read: store -> readers.
    j["store"] = {{"nodes", a.store.nodes == 0 ? p.plan.ranks.size() : a.store.nodes},
                  {"replicas", a.store.replicas},
                  {"fragment_bytes", runOptions(a, p).exec.store.fragmentBytes},
                  {"catalog", a.store.catalogJson}};
  }
  // Checked against the plan's holdings, not the executor's own count: a
  // shard the executor skipped shows here as a shortfall.
  const uint64_t expected = expectedVerifiedBytes(p.plan, runOptions(a, p));
  uint64_t verified = 0;
  for (const auto& s : steps) verified += s.verifiedBytes;
  j["verified"] = verified == expected;
  j["verification"] = {{"outcome", verified == expected ? "bit-exact" : "incomplete"},
                       {"verified_bytes", verified},
                       {"expected_bytes", expected}};
  j["samples"] = {{"step_seconds", {{"values", secs}, {"unit", "s"}, {"better", "lower"}}}};
  std::printf("sync      %s over %s, %zu ranks (%s), %s per update\n", p.strategy.c_str(),
              a.backend.c_str(), p.plan.ranks.size(), mode.c_str(),
              formatBytes(steps.front().bytes).c_str());
  for (const auto& s : steps) {
    std::printf("step %-4d %.3f s  %.4f GB/s  ratio to bound %.2f  %s verified (%.2f s)\n", s.step,
                s.seconds, s.seconds > 0 ? s.bytes / s.seconds / 1e9 : 0.0,
                p.bound.ratio(s.seconds), formatBytes(s.verifiedBytes).c_str(), s.verifySeconds);
  }
  if (p.mode == exec::UpdateMode::kStore) {
    uint64_t read = 0;
    for (const auto& s : steps) read += s.bytesRead;
    std::printf("store     %s written (%u replicas), %s read back by inference ranks\n",
                formatBytes(wire).c_str(), a.store.replicas, formatBytes(read).c_str());
  } else if (p.mode != exec::UpdateMode::kFull) {
    std::printf("delta     %s on the %s, %s full: %.2fx fewer, %.2f %% of elements changed\n",
                formatBytes(wire).c_str(), p.mode == exec::UpdateMode::kDiskDelta ? "disk" : "wire",
                formatBytes(full).c_str(), wire ? double(full) / wire : 0.0,
                elements ? 100.0 * changed / elements : 100.0);
  }
  if (a.deviceMemory) {
    j["device_memory"] = deviceMemoryJson(a);
    std::printf("device    shards in %s memory, staged %s",
                nameOf(kShardMemoryKinds, a.deviceMemoryImpl), nameOf(kStagings, a.staging));
    if (a.staging == Staging::kBucketed) {
      std::printf(" (%s buckets, %d streams)", a.stagingBucket.c_str(), a.stagingStreams);
    }
    std::printf("\n");
    // Both copies are inside each step's time; the slowest rank's of each.
    for (const auto& s : steps) {
      std::printf("staging   step %d: D2H %.3f ms, H2D %.3f ms (slowest rank of each)\n", s.step,
                  s.stageOutSeconds * 1e3, s.stageInSeconds * 1e3);
    }
  }
  reportSwitchAndJoin(a.switchMode == SwitchMode::kShadow, steps, extra, j);
  // Each unit of the schedule as it ran: what `tide validate` compares with
  // the simulator unit by unit (full updates: the other modes run no units).
  const std::vector<sim::UnitTime> units = realUnitTimes(events);
  if (!units.empty()) j["units"] = sim::unitTimesJson(units);
  if (!a.traceOut.empty()) {
    TIDE_ASSIGN_OR_RETURN(const plan::Schedule sched, plan::Schedule::build(p.plan));
    traces::ChromeTrace t;
    addUnits(t, kRealProcess, "real (tide sync)", p.plan, sched, units);
    TIDE_RETURN_IF_ERROR(t.write(a.traceOut));
    std::printf("timeline  %zu unit pieces -> %s\n", t.sliceCount(), a.traceOut.c_str());
  }
  TIDE_RETURN_IF_ERROR(reportWork(p.plan, setup, j));
  std::printf("bound     %.3f s (%s); median step %.3f s = %.2fx\n", p.bound.seconds,
              p.bound.bottleneck.name.c_str(), median, p.bound.ratio(median));
  std::printf("verify    %s of %s expected: %s\n", formatBytes(verified).c_str(),
              formatBytes(expected).c_str(), verified == expected ? "bit-exact" : "INCOMPLETE");
  TIDE_RETURN_IF_ERROR(writeJson(a.json, j));
  if (verified != expected)
    return TIDE_ERROR(Code::kDataLoss, "verified " + std::to_string(verified) + " of " +
                                           std::to_string(expected) + " inference-shard bytes");
  return Status::ok();
}

// A run that failed still leaves its outcome in --json: the error, and
// whether it was a verification failure (a shard not bit-exact). Of a
// launched run's ranks the first to fail writes it (the launcher stops the
// others), so the file is linked into place only where none is yet.
void reportFailure(const SyncArgs& a, const Prepared& p, const Status& why, int rank) {
  if (a.json.empty()) return;
  nlohmann::json j = {{"schema", "tide.sync/1"}, {"strategy", p.strategy},  {"backend", a.backend},
                      {"model", p.w->spec.name}, {"error", why.toString()}, {"verified", false}};
  j["verification"] = {{"outcome", why.code() == Code::kDataLoss ? "not bit-exact" : "not reached"},
                       {"expected_bytes", expectedVerifiedBytes(p.plan, runOptions(a, p))}};
  const std::string mine = a.json + ".rank" + std::to_string(rank);
  Status s = writeJson(mine, j);
  if (s.isOk() && ::link(mine.c_str(), a.json.c_str()) != 0 && errno != EEXIST)
    s = TIDE_ERRNO("--json " + a.json);
  ::unlink(mine.c_str());
  if (!s.isOk()) std::fprintf(stderr, "tide: warning: %s\n", s.toString().c_str());
}

// One rank of a multi-process run (started by the launcher).
void runWorker(const SyncArgs& a) {
  auto p = orThrow(prepare(a));
  auto env = orThrow(exec::readRankEnv());
  if (static_cast<size_t>(env.worldSize) != p.plan.ranks.size()) {
    throw StatusError(TIDE_ERROR(
        Code::kInvalidArgument, "launched with " + std::to_string(env.worldSize) +
                                    " ranks; the plan has " + std::to_string(p.plan.ranks.size())));
  }
  transport::TransportConfig c = transportConfig(a);
  c.rank = env.rank;
  c.worldSize = env.worldSize;
  c.listenAddress = orThrow(exec::listenAddressFor(env));
  orThrow(joinEmulatedNode(p, env.rank, c));
  if (const char* prefix = std::getenv(kRxeEnv)) {
    // Each node's ranks use that node's rxe device, whose links are shaped.
    c.devices = {
        exec::RxeCluster::deviceName(prefix, static_cast<int>(p.plan.ranks[env.rank].node))};
  }
  auto store = orThrow(exec::connectStore(env, a.timeout));
  PrefixStore transportStore(*store, "transport/");
  PrefixStore execStore(*store, "exec/");
  c.store = &transportStore;
  auto t = orThrow(transport::createTransport(c));
  auto layouts = orThrow(exec::RankLayout::buildAll(p.plan));
  workloads::SyntheticWeights weights(p.w->inventory, p.replay.routing, p.replay.rl, a.steps);
  traces::MemoryEventSink events;
  exec::RankRunOptions o = runOptions(a, p);
  exec::ExecReport extra;
  exec::SetupStats setup;
  o.exec.report = &extra;
  o.setup = &setup;
  o.gatherEvents = true;
  auto run =
      exec::runRank(p.plan, layouts, weights, *t, execStore, o, env.rank == 0 ? &events : nullptr);
  if (!run.isOk()) reportFailure(a, p, run.status(), env.rank);
  auto steps = orThrow(std::move(run));
  if (env.rank != 0) return;
  orThrow(writeEvents(a, events.events()));
  const char* mode = std::getenv(kNetnsEnv) ? "processes in network namespaces"
                     : std::getenv(kRxeEnv) ? "processes on one rxe device per node"
                                            : "processes";
  orThrow(report(a, p, steps, mode, extra, setup, events.events(), env.source));
}

void runSyncWith(const SyncArgs& a, const Prepared& p, std::optional<SignalGuard>& signals);

void throwIfInterruptedBeforeStart() {
  if (gInterrupted) {
    throw StatusError(TIDE_ERROR(Code::kCancelled, "interrupted before the run started"));
  }
}

void runSync(const SyncArgs& args) {
  if (args.worker) return args.chaos.on() ? runChaosRank(args) : runWorker(args);
  // Ctrl-C is caught from the start: one that comes while the run plans
  // stops it before anything is started. Left to the default until the
  // cluster's handler is in, it would be lost where the caller ignores
  // SIGINT (as a shell does for a background job) and the run would go on.
  std::optional<SignalGuard> signals(std::in_place, onSignal, 0);
  auto p = orThrow(prepare(args));
  skipWithoutDevice(args);  // after bad input is refused
  throwIfInterruptedBeforeStart();
  if (p.mode != exec::UpdateMode::kDiskDelta || !args.deltaDir.empty()) {
    return runSyncWith(args, p, signals);
  }
  // A temporary shared directory for this run's files, removed afterwards.
  SyncArgs a = args;
  std::string tmpl = (std::filesystem::temp_directory_path() / "tide-disk-delta-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) {
    throw StatusError(TIDE_ERROR(Code::kInternal, "cannot create a temporary directory"));
  }
  a.deltaDir = tmpl;
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } cleanup{tmpl};
  runSyncWith(a, p, signals);
}

// `signals`: the handler runSync put in; the ranks of one process (threads)
// leave Ctrl-C its default, which ends them at once.
void runSyncWith(const SyncArgs& a, const Prepared& p, std::optional<SignalGuard>& signals) {
  const bool processes = p.emulated || a.ranks == RankMode::kProcesses;
  if (p.emulated && a.ranks == RankMode::kThreads) {
    throw StatusError(TIDE_ERROR(Code::kInvalidArgument,
                                 "an emulated cluster runs its ranks as processes "
                                 "(drop --ranks threads)"));
  }
  // rdma on an emulated cluster runs on one rxe device per node in the
  // initial namespace (rdma_rxe sends from no other): rxe_cluster.h.
  // (--chaos is tcp only: refused before this.)
  const bool rxe = p.emulated && a.backend == "rdma";
  if (!processes) {
    signals.reset();
    throwIfInterruptedBeforeStart();  // one that came just before the reset
    workloads::SyntheticWeights weights(p.w->inventory, p.replay.routing, p.replay.rl, a.steps);
    traces::MemoryEventSink events;
    exec::RankRunOptions o = runOptions(a, p);
    exec::ExecReport extra;
    exec::SetupStats setup;
    o.exec.report = &extra;
    o.setup = &setup;
    auto run = exec::runThreads(p.plan, weights, transportConfig(a), o, &events);
    if (!run.isOk()) {
      ::unlink(a.json.c_str());
      reportFailure(a, p, run.status(), 0);
    }
    auto steps = orThrow(std::move(run));
    orThrow(writeEvents(a, events.events()));
    orThrow(report(a, p, steps, "threads", extra, setup, events.events()));
    return;
  }
  if (!a.json.empty()) ::unlink(a.json.c_str());  // a failing rank writes it only where none is
  exec::LaunchOptions lo;
  lo.ranks = static_cast<int>(p.plan.ranks.size());
  lo.command = workerArgv(a);
  std::unique_ptr<exec::EmulatedCluster> cluster;
  std::unique_ptr<exec::RxeCluster> rxeCluster;
  // Ctrl-C while the cluster is set up or the ranks run: `signals` puts the
  // handlers back on every way out (a failed set-up throws).
  if (rxe) {
    auto c = startRxeCluster(a, p, lo);
    if (!c.isOk()) throw StatusError(c.status());
    rxeCluster = std::move(*c);
  } else if (p.emulated) {
    const int nodes = plan::nodesNeeded(p.plan, p.w->cluster.gpusPerNode);
    const workloads::ClusterSpec& cs = p.w->cluster;
    // A leaf's uplink: its nodes' links together over the oversubscription.
    exec::EmulatedFabric fabric{
        cs.nicsPerNode, cs.fabric.nodesPerLeaf,
        cs.fabric.nodesPerLeaf * cs.nicsPerNode * cs.nicBps / cs.fabric.oversubscription};
    auto c = exec::EmulatedCluster::create(nodes, cs.nicBps, fabric);
    if (!c.isOk()) throw StatusError(c.status());
    cluster = std::move(*c);
    // The prefix names everything the run creates: what to look for if a
    // run is killed before its teardown (`tide cluster cleanup` removes it).
    std::printf("cluster   %d nodes as network namespaces %s-n0..%d, %.3f GB/s per node", nodes,
                cluster->prefix().c_str(), nodes - 1, cs.nicBps * cs.nicsPerNode / 1e9);
    if (cs.nicsPerNode > 1) std::printf(" (%d NICs of %.3f GB/s)", cs.nicsPerNode, cs.nicBps / 1e9);
    if (fabric.nodesPerLeaf > 0) {
      std::printf(", %d nodes per leaf, %.3f GB/s leaf uplink", fabric.nodesPerLeaf,
                  fabric.leafUplinkBytesPerSecond / 1e9);
    }
    std::printf("\n");
    std::fflush(stdout);
    lo.masterAddr = exec::EmulatedCluster::hubAddress();
    lo.env[kNetnsEnv] = cluster->prefix();
  }
  Result<int> code = 130;
  lo.interrupted = &gInterrupted;  // a Ctrl-C before the launcher's handlers are in
  if (!gInterrupted) {
    // The store is hosted, and the ranks started, from inside the cluster's
    // hub namespace (each rank then moves to its node's): the host's own
    // network plays no part. Back in the host's namespace before teardown.
    std::optional<exec::NamespaceScope> hub;
    if (cluster) hub.emplace(orThrow(exec::NamespaceScope::enter(cluster->hubNamespace())));
    code = a.chaos.on() ? runChaos(a, p, cluster.get(), gInterrupted) : exec::launch(lo);
  }
  if (rxeCluster && code.isOk() && *code == 0) reportRxeLinks(a, *rxeCluster);
  for (Status s : {cluster ? cluster->teardown() : Status::ok(),
                   rxeCluster ? rxeCluster->teardown() : Status::ok()}) {
    if (!s.isOk()) std::fprintf(stderr, "tide: warning: teardown: %s\n", s.toString().c_str());
  }
  signals.reset();
  const int rc = orThrow(std::move(code));
  if (rc != 0 && a.chaos.on()) {
    throw StatusError(TIDE_ERROR(
        rc == 130 ? Code::kCancelled : Code::kDataLoss,
        rc == 130 ? "soak interrupted" : "soak failed: an invariant broke (see the report)"));
  }
  if (rc != 0) {
    throw StatusError(TIDE_ERROR(Code::kInternal, "sync failed: a rank exited with status " +
                                                      std::to_string(rc) + " (see its output)"));
  }
}

}  // namespace

void addSyncCommand(CLI::App& app) {
  auto a = std::make_shared<SyncArgs>();
  auto* cmd = app.add_subcommand("sync", "run weight updates for real and verify them bit-exact");
  a->workload.strategyHelp =
      sync::strategyNames([](const sync::StrategyDescriptor& s) { return s.runsForReal(); });
  OptionRegistrar options(cmd);
  SyncArgs::visit(*a, options);
  // The multi-host contract: a launcher starts one such process per rank
  // with the rank environment (engine/exec/rendezvous/rank_env.h), all with the same
  // arguments; rank 0 hosts the rendezvous store and writes the result.
  cmd->add_flag("--worker", a->worker,
                "run as one rank of a launched run: tide launch, mpirun, Slurm or torchrun set "
                "the rank, world size, master address/port and run token");
  cmd->callback([a] { runSync(*a); });

  auto* cl = app.add_subcommand("cluster", "emulated cluster housekeeping");
  cl->require_subcommand(1);
  auto* clean = cl->add_subcommand("cleanup", "remove namespaces and links left by killed runs");
  clean->callback([] {
    const int n = orThrow(exec::EmulatedCluster::cleanupAll());
    std::printf("removed %d leftover namespaces\n", n);
    // An rxe cluster's leftovers exist only where rdma_rxe does.
    if (std::filesystem::exists("/sys/module/rdma_rxe")) {
      const int r = orThrow(exec::RxeCluster::cleanupAll());
      std::printf("removed %d leftover rxe devices/links\n", r);
    }
  });
}

}  // namespace tide::harness
