#include "harness/sync_chaos.h"

#include <malloc.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/exec/chaos/chaos_driver.h"
#include "engine/exec/chaos/chaos_protocol.h"
#include "engine/exec/chaos/chaos_worker.h"
#include "engine/exec/chaos/fault_schedule.h"
#include "engine/exec/rendezvous/rank_env.h"
#include "engine/exec/weight_store/store_layout.h"

namespace tide::harness {

namespace {

// glibc raises its mmap threshold after the first free of a large block, and
// blocks of that size then come from the heap, whose freed pages stay
// resident: a one-time step in RSS unrelated to live memory (measured: a
// store rank +12 MiB between updates 60 and 80, flat after). A fixed
// threshold keeps RSS following what a process holds, which is what the
// soak's growth check compares.
void fixMmapThreshold() {
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
}

Result<uint64_t> parseSeed(const std::string& text) {
  if (text.empty() || text.size() > 20 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return TIDE_ERROR(Code::kInvalidArgument,
                      "--chaos " + text + ": the seed must be a non-negative integer");
  }
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (errno == ERANGE) {
    return TIDE_ERROR(Code::kInvalidArgument, "--chaos " + text + ": the seed exceeds 64 bits");
  }
  return static_cast<uint64_t>(v);
}

double mib(uint64_t bytes) {
  return static_cast<double>(bytes) / (1 << 20);
}

std::string faultCounts(const std::map<exec::FaultKind, int>& m) {
  std::string s;
  for (exec::FaultKind k : exec::kAllFaultKinds) {
    auto it = m.find(k);
    s += std::string(s.empty() ? "" : " ") + exec::faultKindName(k) + " " +
         std::to_string(it == m.end() ? 0 : it->second);
  }
  return s;
}

int total(const std::map<exec::FaultKind, int>& m) {
  int n = 0;
  for (const auto& [k, v] : m) n += v;
  return n;
}

void printWindow(const exec::ChaosWindow& w) {
  std::printf(
      "updates %4d-%-4d new %d, previous %d | faults %s (missed %d) | checked %d: %d bit-exact, %d "
      "torn/mixed/wrong | generation %llu reads, %llu torn | hangs %d | restarts %d, reloads %d, "
      "epochs %d | update median %.3f s, max %.3f s\n",
      w.firstUpdate, w.lastUpdate, w.committed, w.abandoned, faultCounts(w.injected).c_str(),
      total(w.missed), w.checked, w.matched, w.mismatched,
      static_cast<unsigned long long>(w.generationReads),
      static_cast<unsigned long long>(w.tornReads), w.hangs, w.restarts, w.reloads, w.epochs,
      w.medianSeconds(), w.maxSeconds());
  std::string procs;
  for (const auto& p : w.processes) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s%s %d fds %.1f MiB", procs.empty() ? "" : ", ",
                  p.rank < 0 ? "driver" : ("rank " + std::to_string(p.rank)).c_str(), p.fds,
                  mib(p.rssBytes));
    procs += buf;
    if (!p.original) procs += " (restarted)";
  }
  std::printf("  processes: %s\n", procs.c_str());
  std::fflush(stdout);
}

nlohmann::json processesJson(const std::vector<exec::ProcessRecord>& ps) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& p : ps) {
    a.push_back({{"rank", p.rank},
                 {"pid", p.pid},
                 {"original", p.original},
                 {"fds", p.fds},
                 {"rss_bytes", p.rssBytes},
                 {"threads", p.threads}});
  }
  return a;
}

nlohmann::json kindsJson(const std::map<exec::FaultKind, int>& m) {
  nlohmann::json j = nlohmann::json::object();
  for (exec::FaultKind k : exec::kAllFaultKinds) {
    auto it = m.find(k);
    j[exec::faultKindName(k)] = it == m.end() ? 0 : it->second;
  }
  return j;
}

nlohmann::json windowJson(const exec::ChaosWindow& w) {
  return {{"first_update", w.firstUpdate},
          {"last_update", w.lastUpdate},
          {"updates", w.updates},
          {"new_version", w.committed},
          {"previous_version", w.abandoned},
          {"faults_injected", kindsJson(w.injected)},
          {"faults_missed", kindsJson(w.missed)},
          {"states_checked", w.checked},
          {"states_bit_exact", w.matched},
          {"states_torn_mixed_or_wrong", w.mismatched},
          {"generation_reads", w.generationReads},
          {"generation_torn_reads", w.tornReads},
          {"hangs", w.hangs},
          {"restarts", w.restarts},
          {"reloads", w.reloads},
          {"epochs", w.epochs},
          {"update_median_seconds", w.medianSeconds()},
          {"update_max_seconds", w.maxSeconds()},
          {"processes", processesJson(w.processes)}};
}

nlohmann::json scheduleJson(const exec::FaultSchedule& s) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& f : s.faults()) {
    nlohmann::json j = {{"update", f.update},
                        {"kind", exec::faultKindName(f.kind)},
                        {"target", f.target},
                        {"at_fraction", f.at}};
    if (f.kind == exec::FaultKind::kLinkBurst || f.kind == exec::FaultKind::kSlowRank) {
      j["seconds"] = f.seconds;
    }
    if (f.kind == exec::FaultKind::kLinkBurst) {
      j["loss_percent"] = f.lossPercent;
      j["rate_percent"] = f.ratePercent;
    }
    if (f.kind == exec::FaultKind::kStoreNodeLoss) j["during_import"] = f.duringImport;
    a.push_back(j);
  }
  return a;
}

std::vector<int> witnessRanks(const plan::TransferPlan& plan) {
  int trainer = -1, reader = -1;
  for (size_t r = 0; r < plan.ranks.size(); ++r) {
    (plan.ranks[r].role == plan::Role::kTrainer ? trainer : reader) = static_cast<int>(r);
  }
  std::vector<int> out;
  for (int r : {trainer, reader}) {
    if (r >= 0) out.push_back(r);
  }
  return out;
}

int storeNodes(const SyncArgs& a, const Prepared& p, const std::vector<exec::RankLayout>& layouts) {
  if (p.mode != exec::UpdateMode::kStore) return 0;
  auto frag = parseSize(a.storeFragment);
  auto sl = exec::StoreLayout::build(p.plan, layouts, a.store.nodes, a.store.replicas,
                                     frag.isOk() ? *frag : 4 << 20, 0);
  return sl.isOk() ? static_cast<int>(sl->nodes) : 0;
}

}  // namespace

Status checkChaos(const SyncArgs& a, const Prepared& p) {
  if (!a.chaos.on()) return Status::ok();
  TIDE_RETURN_IF_ERROR(parseSeed(a.chaos.seed).status());
  auto parsed = exec::parseFaultKinds(a.chaos.kinds);
  if (!parsed.isOk()) return parsed.status().withContext("--chaos-kinds");
  const auto kinds = std::move(*parsed);
  auto bad = [](const std::string& why) { return TIDE_ERROR(Code::kInvalidArgument, why); };
  if (!(a.chaos.rate >= 0 && a.chaos.rate <= 1)) return bad("--chaos-rate must be in [0, 1]");
  if (!(a.chaos.maxBurst >= 0.2)) return bad("--chaos-max-burst must be >= 0.2 s");
  if (a.chaos.maxBurst > a.timeout / 2) {
    // A rank stopped longer than that fails its peers by their timeout
    // instead of slowing them: a different fault, and the soak's bound.
    return bad("--chaos-max-burst must be at most half of --timeout");
  }
  if (a.chaos.reportEvery < 1) return bad("--chaos-report must be >= 1");
  if (!a.worker && !p.emulated && a.ranks != RankMode::kProcesses) {  // a worker is one
    return bad(
        "--chaos runs long-lived rank processes: use an emulated cluster or --ranks "
        "processes");
  }
  const bool link =
      std::find(kinds.begin(), kinds.end(), exec::FaultKind::kLinkBurst) != kinds.end();
  if (link && !p.emulated && a.chaos.kinds != "all") {
    return bad("--chaos-kinds link needs an emulated cluster (--cluster emulated:...)");
  }
  const bool storeFaults =
      std::find(kinds.begin(), kinds.end(), exec::FaultKind::kStoreNodeLoss) != kinds.end();
  if (storeFaults && p.mode != exec::UpdateMode::kStore && a.chaos.kinds != "all") {
    return bad("--chaos-kinds store-node needs --strategy store");
  }
  if (a.backend != "tcp") return bad("--chaos runs on --backend tcp");
  const bool full = p.mode == exec::UpdateMode::kFull && !p.descriptor->relaysThroughTargets;
  if (!(full || p.mode == exec::UpdateMode::kStore)) {
    return bad(
        "--chaos takes --strategy p2p or store (broadcast forwards from inference "
        "shards, deltas apply to the version before)");
  }
  if (a.switchMode != SwitchMode::kShadow && !(a.chaos.allowInplace && full)) {
    return bad("--chaos needs --switch shadow: an update that fails in place leaves torn shards");
  }
  if (a.joinAtStep >= 0) return bad("--chaos restarts engines itself: drop --join-engine-at-step");
  if (a.store.loseNode >= 0) return bad("--chaos loses store nodes itself: drop --store-lose-node");
  if (a.poison) return bad("--chaos resumes ranks from the version they serve: drop --poison");
  if (!a.events.empty() || !a.trace.empty()) return bad("--chaos records no transfer events");
  return Status::ok();
}

Result<int> runChaos(const SyncArgs& a, const Prepared& p, exec::EmulatedCluster* cluster,
                     const std::atomic<bool>& interrupted) {
  fixMmapThreshold();
  TIDE_ASSIGN_OR_RETURN(uint64_t seed, parseSeed(a.chaos.seed));
  TIDE_ASSIGN_OR_RETURN(auto kinds, exec::parseFaultKinds(a.chaos.kinds));
  TIDE_ASSIGN_OR_RETURN(auto layouts, exec::RankLayout::buildAll(p.plan));
  workloads::SyntheticWeights weights(p.w->inventory, p.replay.routing, p.replay.rl, a.steps);
  exec::ChaosSpace space;
  space.updates = a.steps;
  for (size_t r = 0; r < p.plan.ranks.size(); ++r) space.ranks.push_back(static_cast<int>(r));
  // Kills spare the last trainer and the last inference rank: processes
  // that live through the whole run, through every rebuilt transport and
  // executor, so that what leaks per update or per epoch shows in their
  // descriptors and memory (killed ranks restart fresh).
  const std::vector<int> witnesses = witnessRanks(p.plan);
  for (int r : space.ranks) {
    if (std::find(witnesses.begin(), witnesses.end(), r) == witnesses.end()) {
      space.killable.push_back(r);
    }
  }
  space.nodes = cluster ? cluster->nodes() : 0;
  space.storeNodes = storeNodes(a, p, layouts);
  // "all" means every kind this run can take.
  if (a.chaos.kinds == "all") {
    std::erase_if(kinds, [&](exec::FaultKind k) {
      return (k == exec::FaultKind::kStoreNodeLoss && space.storeNodes == 0) ||
             (k == exec::FaultKind::kLinkBurst && space.nodes == 0);
    });
  }
  space.kinds = kinds;
  space.rate = a.chaos.rate;
  space.maxBurstSeconds = a.chaos.maxBurst;
  TIDE_ASSIGN_OR_RETURN(auto schedule, exec::FaultSchedule::generate(seed, space));

  std::printf("chaos     seed %llu, %d updates, %s over %s, %zu ranks, %zu faults scheduled (%s)\n",
              static_cast<unsigned long long>(seed), a.steps, p.strategy.c_str(), a.backend.c_str(),
              p.plan.ranks.size(), schedule.faults().size(),
              faultCounts(schedule.counts()).c_str());
  std::string who;
  for (int r : witnesses) who += " " + std::to_string(r);
  std::printf("  never killed (long-lived witnesses): ranks%s\n", who.c_str());
  for (const auto& f : schedule.faults()) std::printf("  fault   %s\n", f.toString().c_str());
  std::fflush(stdout);

  exec::ChaosDriverOptions o;
  o.updates = a.steps;
  o.timeoutSeconds = a.timeout;
  o.reportEvery = a.chaos.reportEvery;
  o.workerArgv = workerArgv(a);
  if (cluster) {
    o.env[kNetnsEnv] = cluster->prefix();
    o.masterAddr = exec::EmulatedCluster::hubAddress();  // in its hub namespace: cmd_sync.cc
  }
  o.interrupted = &interrupted;
  o.onWindow = printWindow;
  const bool verbose = a.chaos.verbose;
  o.onEvent = [verbose](const std::string& line) {
    if (verbose || line.rfind("VIOLATION", 0) == 0) {
      std::printf("  event   %s\n", line.c_str());
      std::fflush(stdout);
    }
  };
  exec::ChaosDriver driver(p.plan, layouts, weights, schedule, cluster, o);
  auto run = driver.run();
  if (!run.isOk()) {
    if (run.status().code() == Code::kCancelled && interrupted.load()) return 130;
    return run.status();
  }
  const exec::ChaosResult& r = *run;
  const exec::ChaosWindow& t = r.total;
  std::printf(
      "total     %d updates: %d on the new version, %d on the previous one; faults %s; "
      "%d of %d states bit-exact; %llu torn generation reads; %d hangs; final version %d\n",
      t.updates, t.committed, t.abandoned, faultCounts(t.injected).c_str(), t.matched, t.checked,
      static_cast<unsigned long long>(t.tornReads), t.hangs, r.finalVersion);
  std::printf(
      "growth    fds %+d, rss %+.1f MiB (last window against the first, long-lived "
      "processes)\n",
      r.fdGrowth, static_cast<double>(r.rssGrowthBytes) / (1 << 20));
  for (const auto& v : r.violations) std::printf("VIOLATION %s\n", v.c_str());
  std::printf("invariants %s\n", r.ok() ? "held" : "BROKEN");
  if (!a.json.empty()) {
    nlohmann::json j;
    j["schema"] = "tide.sync.chaos/1";
    j["seed"] = seed;
    j["strategy"] = p.strategy;
    j["switch"] = nameOf(kSwitchModes, a.switchMode);
    j["backend"] = a.backend;
    j["model"] = p.w->spec.name;
    j["train"] = p.w->train.toString();
    j["infer"] = p.w->infer.toString();
    j["cluster"] = p.w->cluster.name;
    j["ranks"] = p.plan.ranks.size();
    j["updates"] = a.steps;
    j["timeout_seconds"] = a.timeout;
    j["fault_rate"] = a.chaos.rate;
    nlohmann::json kj = nlohmann::json::array();
    for (auto k : kinds) kj.push_back(exec::faultKindName(k));
    j["fault_kinds"] = kj;
    j["schedule"] = scheduleJson(schedule);
    j["never_killed_ranks"] = witnesses;
    j["scheduled"] = kindsJson(schedule.counts());
    nlohmann::json w = nlohmann::json::array();
    for (const auto& win : r.windows) w.push_back(windowJson(win));
    j["windows"] = w;
    j["total"] = windowJson(t);
    j["start_processes"] = processesJson(r.start);
    j["final_version"] = r.finalVersion;
    j["fd_growth"] = r.fdGrowth;
    j["rss_growth_bytes"] = r.rssGrowthBytes;
    j["violations"] = r.violations;
    j["violation_count"] = r.violationCount;
    j["invariants_held"] = r.ok();
    std::ofstream out(a.json);
    out << j.dump(2) << "\n";
    if (!out) return TIDE_ERROR(Code::kUnavailable, "--json " + a.json + ": cannot write");
  }
  return r.ok() ? 0 : 1;
}

void runChaosRank(const SyncArgs& a) {
  // The driver's death takes the rank with it (it would wait for commands).
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() == 1) return;
  fixMmapThreshold();
  auto p = orThrow(prepare(a));
  auto env = orThrow(exec::readRankEnv());
  if (static_cast<size_t>(env.worldSize) != p.plan.ranks.size()) {
    throw StatusError(
        TIDE_ERROR(Code::kInvalidArgument, "chaos: the world does not match the plan"));
  }
  exec::ChaosWorkerSetup setup;
  setup.transport = transportConfig(a);
  setup.transport.rank = env.rank;
  setup.transport.worldSize = env.worldSize;
  orThrow(joinEmulatedNode(p, env.rank, setup.transport));
  auto store = orThrow(exec::connectStore(env, a.timeout));
  auto layouts = orThrow(exec::RankLayout::buildAll(p.plan));
  workloads::SyntheticWeights weights(p.w->inventory, p.replay.routing, p.replay.rl, a.steps);
  setup.plan = &p.plan;
  setup.layouts = &layouts;
  setup.weights = &weights;
  setup.exec = runOptions(a, p).exec;
  setup.rank = env.rank;
  if (const char* first = std::getenv(exec::chaos::kFirstCommandEnv)) {
    setup.firstCommand = std::atoi(first);
  }
  // The driver posts each command within its own bound on an update.
  setup.commandWaitSeconds = 4 * a.timeout + 60;
  orThrow(exec::runChaosWorker(*store, setup));
}

}  // namespace tide::harness
