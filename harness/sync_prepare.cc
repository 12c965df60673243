// `tide sync`'s argument checks, the plan they describe and the command
// line of a launched rank (sync_args.h).

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <optional>

#include "engine/core/units.h"
#include "engine/exec/launch/emulated_cluster.h"
#include "engine/exec/launch/net_namespace.h"
#include "engine/exec/weight_store/store_layout.h"
#include "harness/output_path.h"
#include "harness/sync_args.h"
#include "harness/sync_chaos.h"
#include "harness/sync_device.h"
#include "harness/sync_plan_file.h"

namespace tide::harness {

Result<Prepared> prepare(const SyncArgs& a) {
  Prepared p;
  if (a.steps < 1) return TIDE_ERROR(Code::kInvalidArgument, "--steps must be >= 1");
  if (!(a.timeout > 0)) return TIDE_ERROR(Code::kInvalidArgument, "--timeout must be > 0");
  // -1 is the default, "none"; anything lower is a typo, not a request.
  if (a.store.loseNode < -1) {
    return TIDE_ERROR(Code::kInvalidArgument, "--store-lose-node must be a node index >= 0 (got " +
                                                  std::to_string(a.store.loseNode) + ")");
  }
  if (a.joinAtStep < -1) {
    return TIDE_ERROR(Code::kInvalidArgument, "--join-engine-at-step must be a step >= 0 (got " +
                                                  std::to_string(a.joinAtStep) + ")");
  }
  // Before the run, which may take minutes, not after it.
  if (!a.json.empty()) TIDE_RETURN_IF_ERROR(checkOutputPath("--json", a.json));
  if (!a.events.empty()) TIDE_RETURN_IF_ERROR(checkOutputPath("--events", a.events));
  if (!a.traceOut.empty()) TIDE_RETURN_IF_ERROR(checkOutputPath("--trace-out", a.traceOut));
  const auto compiled = transport::compiledBackends();
  if (std::find(compiled.begin(), compiled.end(), a.backend) == compiled.end()) {
    std::string why = transport::whyNotCompiled(a.backend);
    return TIDE_ERROR(Code::kInvalidArgument, "--backend " + a.backend + ": " + why);
  }
  if (a.backend == "nccl") {
    return TIDE_ERROR(Code::kUnimplemented,
                      "--backend nccl: the executor keeps weights in host memory and drives "
                      "one-sided writes; NCCL's broadcast path (NcclTransport::broadcast) is not "
                      "wired into it yet (see ctest -L gpu)");
  }
  WorkloadOptions wo = a.workload;
  wo.inferDtype = a.inferDtype;  // loadWorkload validates and applies it
  std::optional<plan::TransferPlan> recorded;
  if (!a.planFile.empty()) {
    TIDE_ASSIGN_OR_RETURN(recorded, plan::TransferPlan::load(a.planFile));
    TIDE_ASSIGN_OR_RETURN(
        wo, recordedWorkload(*recorded, a.planFile, a.workload, SyncArgs{}.workload, a.inferDtype));
  }
  p.strategy = wo.strategy;
  auto found = sync::findStrategy(wo.strategy);
  if (!found.isOk()) return found.status().withContext("--strategy");
  const sync::StrategyDescriptor& d = **found;
  p.descriptor = &d;
  auto sparseNames = [] {
    return sync::strategyNames([](const sync::StrategyDescriptor& s) { return s.sparseDeltas; });
  };
  if (a.sparse && !d.sparseDeltas) {
    return TIDE_ERROR(Code::kInvalidArgument,
                      "--sparse needs --strategy " + sparseNames() + " (got " + wo.strategy + ")");
  }
  switch (d.delivery) {
    case sync::Delivery::kModel:
      return TIDE_ERROR(Code::kInvalidArgument,
                        "--strategy " + wo.strategy + " models " + std::string(d.models) +
                            ": it is simulated (tide sim), not run; tide sync runs " +
                            sync::strategyNames(
                                [](const sync::StrategyDescriptor& s) { return s.runsForReal(); }));
    case sync::Delivery::kDiskDelta:
      // Files replace the network; the plan (who needs what from whom) is the planner's.
      if (a.baseEvery < 1) return TIDE_ERROR(Code::kInvalidArgument, "--base-every must be >= 1");
      p.mode = exec::UpdateMode::kDiskDelta;
      break;
    case sync::Delivery::kStore: {
      // Snapshots in the ranks' store segments; the plan says who reads what.
      TIDE_ASSIGN_OR_RETURN(uint64_t frag, parseSize(a.storeFragment));
      if (frag < 64) return TIDE_ERROR(Code::kInvalidArgument, "--store-fragment must be >= 64 B");
      p.mode = exec::UpdateMode::kStore;
      break;
    }
    case sync::Delivery::kWire:
      break;
  }
  if (a.sparse) {
    if (a.poison) {
      return TIDE_ERROR(Code::kInvalidArgument,
                        "--sparse applies deltas to version 0: drop --poison");
    }
    p.strategy = sync::runName(d, true);
    p.mode = exec::UpdateMode::kSparse;
  }
  TIDE_ASSIGN_OR_RETURN(p.w, loadWorkload(wo));
  TIDE_ASSIGN_OR_RETURN(p.replay, loadReplay(a.replay, p.w->spec, p.w->inventory, a.steps));
  Workload& w = *p.w;
  // A run pins its buffers once, before its first update: the plan's
  // register steps, in this host's pages.
  w.strategyOptions.firstUpdate = true;
  w.strategyOptions.pageBytes = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  if (recorded) {
    TIDE_RETURN_IF_ERROR(checkRecordedPlan(*recorded, a.planFile, w));
    p.plan = std::move(*recorded);
  } else {
    TIDE_ASSIGN_OR_RETURN(p.plan, w.makePlan());
  }
  if (p.mode == exec::UpdateMode::kStore) {
    // Checked once here rather than by every rank.
    TIDE_ASSIGN_OR_RETURN(auto layouts, exec::RankLayout::buildAll(p.plan));
    TIDE_ASSIGN_OR_RETURN(auto sl,
                          exec::StoreLayout::build(p.plan, layouts, a.store.nodes, a.store.replicas,
                                                   *parseSize(a.storeFragment), 0));
    if (a.store.loseNode >= static_cast<int>(sl.nodes)) {
      return TIDE_ERROR(Code::kInvalidArgument,
                        "--store-lose-node " + std::to_string(a.store.loseNode) + ": there are " +
                            std::to_string(sl.nodes) + " store nodes");
    }
  }
  if (a.switchMode == SwitchMode::kShadow && p.mode != exec::UpdateMode::kStore &&
      p.mode != exec::UpdateMode::kFull) {
    return TIDE_ERROR(
        Code::kInvalidArgument,
        "--switch shadow takes full updates or the store, not --sparse or disk-delta");
  }
  if (a.joinAtStep >= 0) {
    if (p.mode != exec::UpdateMode::kStore) {
      return TIDE_ERROR(Code::kInvalidArgument, "--join-engine-at-step is for --strategy store");
    }
    if (a.joinAtStep >= a.steps) {
      return TIDE_ERROR(Code::kInvalidArgument,
                        "--join-engine-at-step must be below --steps (the engine takes part in "
                        "the updates after it)");
    }
    if (w.infer.engines < 2) {
      return TIDE_ERROR(
          Code::kInvalidArgument,
          "--join-engine-at-step needs --infer engines >= 2 (one joins, the others run)");
    }
  }
  p.emulated = w.cluster.kind == workloads::ClusterKind::kEmulated;
  TIDE_ASSIGN_OR_RETURN(p.bound, plan::lowerBound(p.plan, boundCluster(w.cluster)));
  TIDE_RETURN_IF_ERROR(checkChaos(a, p));
  TIDE_RETURN_IF_ERROR(checkDeviceMemory(a, p));
  return p;
}

exec::RankRunOptions runOptions(const SyncArgs& a, const Prepared& p) {
  exec::RankRunOptions o;
  o.exec.mode = p.mode;
  o.exec.deltaDir = a.deltaDir;
  o.exec.baseEvery = static_cast<uint32_t>(a.baseEvery);
  o.exec.store = a.store;
  if (auto f = parseSize(a.storeFragment); f.isOk()) o.exec.store.fragmentBytes = *f;
  o.exec.store.loseStep = 1;
  o.exec.store.loseDuringImport = a.storeLoseWhen == LoseWhen::kImport;
  o.exec.shadowSwitch = a.switchMode == SwitchMode::kShadow;
  if (a.joinAtStep >= 0) {
    // The last engine's ranks: the last tp inference ranks.
    std::vector<int> readers;
    for (const auto& r : p.plan.ranks) {
      if (r.role != plan::Role::kTrainer) readers.push_back(static_cast<int>(r.id));
    }
    const size_t tp = static_cast<size_t>(p.w->infer.tp);
    o.exec.store.joinStep = a.joinAtStep;
    o.exec.store.joinRanks.assign(
        readers.end() - static_cast<std::ptrdiff_t>(std::min(tp, readers.size())), readers.end());
  }
  o.steps = a.steps;
  o.exec.timeoutSeconds = a.timeout;
  if (a.poison || a.corruptRank >= 0) {  // the CLI's test flags
    auto hooks = std::make_shared<exec::TestHooks>();
    hooks->poison = a.poison;
    hooks->corruptRank = a.corruptRank;
    o.exec.hooks = std::move(hooks);
  }
  setDeviceMemory(a, o);
  return o;
}

uint64_t expectedVerifiedBytes(const plan::TransferPlan& plan, const exec::RankRunOptions& o) {
  const auto& joining = o.exec.store.joinRanks;
  uint64_t total = 0;
  for (const auto& h : plan.holdings) {
    if (h.space != plan::Space::kInfer) continue;
    const bool joins =
        std::find(joining.begin(), joining.end(), static_cast<int>(h.rank)) != joining.end();
    const int served = o.steps - (joins ? std::max(0, o.exec.store.joinStep) : 0);
    total += plan.regionBytes(h.tensor, h.box, h.dtype) * static_cast<uint64_t>(served);
  }
  return total;
}

transport::TransportConfig transportConfig(const SyncArgs& a) {
  transport::TransportConfig c;
  c.backend = a.backend;
  c.streams = a.streams;
  c.connectTimeoutSeconds = a.timeout;
  c.opTimeoutSeconds = a.timeout;
  return c;
}

Status joinEmulatedNode(const Prepared& p, int rank, transport::TransportConfig& c) {
  const char* prefix = std::getenv(kNetnsEnv);
  if (!prefix) return Status::ok();
  const plan::RankInfo& r = p.plan.ranks[static_cast<size_t>(rank)];
  const int node = static_cast<int>(r.node);
  TIDE_RETURN_IF_ERROR(exec::enterNamespace(exec::EmulatedCluster::nodeNamespace(prefix, node)));
  const workloads::ClusterSpec& cs = p.w->cluster;
  c.listenAddress =
      exec::EmulatedCluster::nicAddress(node, cs.nicOfGpu(static_cast<int>(r.gpu)), cs.nicsPerNode);
  c.sourceAddress = c.listenAddress;
  return Status::ok();
}

std::vector<std::string> workerArgv(const SyncArgs& a) {
  ArgvWriter w;
  w.argv() = {"/proc/self/exe", "sync"};
  SyncArgs::visit(a, w);
  std::vector<std::string> v = std::move(w.argv());
  v.push_back("--worker");
  // /proc/self/exe is resolved by the launcher's execvp in the child.
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n > 0) v[0] = std::string(path, static_cast<size_t>(n));
  return v;
}

}  // namespace tide::harness
