#include "engine/exec/chaos/chaos_driver.h"

#include <unistd.h>

#include <algorithm>
#include <optional>
#include <random>
#include <thread>

#include "engine/core/clock.h"
#include "engine/exec/chaos/chaos_protocol.h"
#include "engine/exec/chaos/injected_fault.h"
#include "engine/exec/chaos/process_sample.h"
#include "engine/exec/executor/shard_digest.h"
#include "engine/exec/launch/rank_process.h"
#include "engine/exec/rendezvous/store_server.h"
#include "engine/exec/rendezvous/tcp_store.h"
#include "engine/exec/weight_store/store_layout.h"

extern char** environ;

namespace tide::exec {

using chaos::Command;
using chaos::CommandKind;
using chaos::Reply;

namespace {

constexpr double kPollSeconds = 0.005;  // the driver's loop; its store is in-process
constexpr int kMaxEpochTries = 5;
constexpr double kMarginSeconds = 10;            // on top of twice the ranks' timeout
constexpr double kDefaultTransferSeconds = 0.3;  // before a clean update was timed

std::string randomToken() {
  std::random_device rd;
  static const char* hex = "0123456789abcdef";
  std::string t;
  for (int i = 0; i < 32; ++i) t.push_back(hex[rd() & 15]);
  return t;
}

// The replies to one command, as they arrive.
struct Round {
  int command = 0;
  std::vector<std::optional<Reply>> replies;  // by rank
  std::vector<char> dead;                     // died without replying
  int64_t seen = 0;
  bool complete() const {
    for (size_t r = 0; r < replies.size(); ++r) {
      if (!replies[r] && !dead[r]) return false;
    }
    return true;
  }
  // The first failure, described; empty when none yet.
  std::string failure() const {
    for (size_t r = 0; r < replies.size(); ++r) {
      if (dead[r]) return "rank " + std::to_string(r) + " died";
      if (replies[r] && !replies[r]->ok) {
        return "rank " + std::to_string(r) + ": " + replies[r]->message;
      }
    }
    return "";
  }
};

}  // namespace

struct ChaosDriver::State {
  State(const plan::TransferPlan& p, const std::vector<RankLayout>& l,
        const workloads::SyntheticWeights& w, const FaultSchedule& s, EmulatedCluster* c,
        ChaosDriverOptions opt)
      : plan(p), layouts(l), weights(w), schedule(s), cluster(c), o(std::move(opt)) {}

  const plan::TransferPlan& plan;
  const std::vector<RankLayout>& layouts;
  const workloads::SyntheticWeights& weights;
  const FaultSchedule& schedule;
  EmulatedCluster* cluster;
  ChaosDriverOptions o;

  int world = 0;
  std::unique_ptr<TcpStore> store;
  std::string token;
  std::vector<std::unique_ptr<RankProcess>> procs;
  std::vector<char> original;
  int nextCommand = 0;
  int epoch = 0;
  int erasedEpochs = 0;  // epochs 1..erasedEpochs have no keys left
  int committed = 0;
  std::map<std::pair<int, int>, uint64_t> expected;  // (rank, version) -> digest
  std::vector<double> cleanSeconds;                  // pause to ready, updates without a fault
  ChaosResult result;
  ChaosWindow window;

  double bound() const { return 2 * o.timeoutSeconds + kMarginSeconds; }
  bool interrupted() const { return o.interrupted && o.interrupted->load(); }
  void event(const std::string& line) const {
    if (o.onEvent) o.onEvent(line);
  }
  void violation(const std::string& what) {
    ++result.violationCount;
    if (result.violations.size() < 20) result.violations.push_back(what);
    event("VIOLATION " + what);
  }

  std::vector<std::string> environment(int rank, int firstCommand) const {
    std::map<std::string, std::string> vars;
    for (char** e = environ; e && *e; ++e) {
      const std::string kv(*e);
      const auto eq = kv.find('=');
      if (eq != std::string::npos) vars[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    for (const auto& [k, v] : o.env) vars[k] = v;
    vars["TIDE_RANK"] = vars["TIDE_LOCAL_RANK"] = std::to_string(rank);
    vars["TIDE_WORLD_SIZE"] = std::to_string(world);
    vars["TIDE_MASTER_ADDR"] = o.masterAddr;
    vars["TIDE_MASTER_PORT"] = std::to_string(store->port());
    vars["TIDE_RUN_TOKEN"] = token;
    vars["TIDE_STORE_EXTERNAL"] = "1";
    vars[chaos::kFirstCommandEnv] = std::to_string(firstCommand);
    std::vector<std::string> out;
    for (const auto& [k, v] : vars) out.push_back(k + "=" + v);
    return out;
  }

  Status spawn(int rank) {
    TIDE_ASSIGN_OR_RETURN(procs[rank],
                          RankProcess::spawn(o.workerArgv, environment(rank, nextCommand)));
    return Status::ok();
  }

  int post(const Command& c) {
    const int n = nextCommand++;
    store->hostedServer()->set(chaos::commandKey(n), c.encode());
    return n;
  }

  Round newRound(int n) const {
    Round r;
    r.command = n;
    r.replies.resize(world);
    r.dead.assign(world, 0);
    return r;
  }

  Status poll(Round& r) {
    TIDE_ASSIGN_OR_RETURN(int64_t count, store->add(chaos::repliesKey(r.command), 0));
    if (count > r.seen) {
      r.seen = count;
      for (int k = 0; k < world; ++k) {
        if (r.replies[k]) continue;
        auto text = store->get(chaos::replyKey(r.command, k), 0);
        if (!text.isOk()) continue;
        TIDE_ASSIGN_OR_RETURN(Reply reply, Reply::decode(*text));
        r.replies[k] = std::move(reply);
      }
    }
    for (int k = 0; k < world; ++k) {
      if (!r.replies[k] && !r.dead[k] && !procs[k]->running()) r.dead[k] = 1;
    }
    return Status::ok();
  }

  void abortEpoch(const std::string& why) {
    store->hostedServer()->set(chaos::abortKey(epoch), why);
  }

  Result<uint64_t> expectedDigest(int rank, int version) {
    auto key = std::make_pair(rank, version);
    auto it = expected.find(key);
    if (it != expected.end()) return it->second;
    TIDE_ASSIGN_OR_RETURN(uint64_t d, expectedShardDigest(weights, layouts[rank], version));
    expected[key] = d;
    return d;
  }

  // An inference rank's state after a round: exactly version `want`, whole.
  Status check(int rank, const Reply& r, int want, const std::string& where) {
    window.generationReads += r.generationReads;
    window.tornReads += r.tornReads;
    if (r.tornReads > 0) {
      violation(where + ": generation on rank " + std::to_string(rank) + " read a torn shard " +
                std::to_string(r.tornReads) + " times");
    }
    if (layouts[rank].placed(plan::Space::kInfer).empty()) return Status::ok();
    ++window.checked;
    if (r.served != want) {
      ++window.mismatched;
      violation(where + ": rank " + std::to_string(rank) + " serves version " +
                std::to_string(r.served) + ", not " + std::to_string(want));
      return Status::ok();
    }
    TIDE_ASSIGN_OR_RETURN(uint64_t d, expectedDigest(rank, want));
    if (d != r.digest) {
      ++window.mismatched;
      violation(where + ": rank " + std::to_string(rank) + "'s shard is not version " +
                std::to_string(want) + " (digest " + std::to_string(r.digest) + ", expected " +
                std::to_string(d) + "): torn or mixed");
      return Status::ok();
    }
    ++window.matched;
    return Status::ok();
  }

  double estimate() const {
    if (cleanSeconds.empty()) return kDefaultTransferSeconds;
    std::vector<double> s(cleanSeconds.end() - std::min<std::ptrdiff_t>(20, cleanSeconds.size()),
                          cleanSeconds.end());
    std::nth_element(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(s.size() / 2), s.end());
    return s[s.size() / 2];
  }

  std::vector<ProcessRecord> sample() const {
    std::vector<ProcessRecord> out;
    auto add = [&](int rank, pid_t pid, bool orig) {
      auto s = sampleProcess(pid);
      if (!s.isOk()) return;
      out.push_back(ProcessRecord{rank, pid, orig, s->fds, s->rssBytes, s->threads});
    };
    add(-1, ::getpid(), true);
    for (int r = 0; r < world; ++r) add(r, procs[r]->pid(), original[r] != 0);
    return out;
  }

  Status restartDead() {
    for (int r = 0; r < world; ++r) {
      if (procs[r]->running()) continue;
      procs[r].reset();
      TIDE_RETURN_IF_ERROR(spawn(r));
      original[r] = 0;
      ++window.restarts;
    }
    return Status::ok();
  }

  void erase(const std::string& prefix) { store->hostedServer()->erasePrefix(prefix); }

  Status startEpoch(int nextAttempt);
  Status runUpdate(int attempt);
  Status strike(const Fault& f, const Round& r, std::unique_ptr<InjectedFault>& active);
  Status stopAll();
};

Status ChaosDriver::State::startEpoch(int nextAttempt) {
  for (int attempt = 1; attempt <= kMaxEpochTries; ++attempt) {
    if (interrupted()) return TIDE_ERROR(Code::kCancelled, "chaos: interrupted");
    Command c;
    c.kind = CommandKind::kEpoch;
    c.epoch = ++epoch;
    c.version = committed;
    // This epoch's store-node fault, at the step its update will run as
    // if every update until then commits (else a new epoch recomputes it).
    if (const Fault* f = schedule.nextStoreLoss(nextAttempt)) {
      c.loseNode = f->target;
      c.loseStep = committed + 1 + (f->update - nextAttempt);
      c.loseDuringImport = f->duringImport;
    }
    ++window.epochs;
    const int n = post(c);
    Round r = newRound(n);
    const Deadline deadline = Deadline::after(bound());
    bool aborted = false;
    std::string timedOut;  // set when the ranks that did not reply were killed
    while (true) {
      // As in an update: a Ctrl-C is no hang, and the caller stops the ranks.
      if (interrupted()) return TIDE_ERROR(Code::kCancelled, "chaos: interrupted");
      TIDE_RETURN_IF_ERROR(poll(r));
      const std::string failed = r.failure();
      if (!failed.empty() && !aborted) {
        abortEpoch("epoch setup failed: " + failed);
        aborted = true;
      }
      if (r.complete()) break;
      if (deadline.expired()) {
        ++window.hangs;
        violation("epoch " + std::to_string(epoch) + " was not built within " +
                  std::to_string(bound()) + " s");
        for (int k = 0; k < world; ++k) {
          if (!r.replies[k]) procs[k]->kill();
        }
        abortEpoch("the epoch ran out of time");
        timedOut = "it ran out of time";
        break;
      }
      std::this_thread::sleep_for(std::chrono::duration<double>(kPollSeconds));
    }
    // Empty only when every rank replied and all succeeded: the replies are
    // then all there to check (killed ranks that never replied are not).
    const std::string failed = timedOut.empty() ? r.failure() : timedOut;
    if (failed.empty()) {
      const std::string where = "epoch " + std::to_string(epoch);
      for (int k = 0; k < world; ++k) {
        if (r.replies[k]->reloaded && epoch > 1) ++window.reloads;  // epoch 1: the first load
        TIDE_RETURN_IF_ERROR(check(k, *r.replies[k], committed, where));
      }
      for (; erasedEpochs < epoch - 1; ++erasedEpochs) erase(chaos::epochPrefix(erasedEpochs + 1));
      erase(chaos::commandPrefix(n));
      return Status::ok();
    }
    event("epoch " + std::to_string(epoch) + " failed (" + failed + "); building another");
    erase(chaos::commandPrefix(n));
    TIDE_RETURN_IF_ERROR(restartDead());
  }
  return TIDE_ERROR(Code::kUnavailable, "chaos: no epoch could be built in " +
                                            std::to_string(kMaxEpochTries) + " tries");
}

// Starts fault `f` if the update is still running where it strikes.
Status ChaosDriver::State::strike(const Fault& f, const Round& r,
                                  std::unique_ptr<InjectedFault>& active) {
  const bool rankFault = f.kind == FaultKind::kKillRank || f.kind == FaultKind::kSlowRank;
  const bool running = rankFault ? !r.replies[f.target] && !r.dead[f.target] : !r.complete();
  if (!running) {
    ++window.missed[f.kind];
    return Status::ok();
  }
  ++window.injected[f.kind];
  switch (f.kind) {
    case FaultKind::kKillRank:
      procs[f.target]->kill();
      return Status::ok();
    case FaultKind::kSlowRank: {
      TIDE_ASSIGN_OR_RETURN(auto p, PausedRank::start(*procs[f.target]));
      active = std::move(p);
      return Status::ok();
    }
    case FaultKind::kLinkBurst: {
      if (!cluster) return TIDE_ERROR(Code::kInvalidArgument, "chaos: link faults need a cluster");
      TIDE_ASSIGN_OR_RETURN(
          auto b, LinkBurst::start(*cluster, f.target, f.lossPercent, f.ratePercent / 100));
      active = std::move(b);
      return Status::ok();
    }
    case FaultKind::kStoreNodeLoss:
      break;
  }
  return Status::ok();
}

Status ChaosDriver::State::runUpdate(int attempt) {
  const int step = committed + 1;
  const int updateEpoch = epoch;
  const Fault* f = schedule.forUpdate(attempt);
  const bool timed = f && f->kind != FaultKind::kStoreNodeLoss;
  Command c;
  c.kind = CommandKind::kUpdate;
  c.epoch = epoch;
  c.version = step;
  const int n = post(c);
  Round r = newRound(n);
  const std::string execPrefix = chaos::epochPrefix(epoch) + "exec/";
  const std::string pauseKey = execPrefix + "step" + std::to_string(step) + "/pause/done";
  const double t0 = nowSeconds();
  const Deadline deadline = Deadline::after(bound());
  double pauseAt = 0, readyAt = 0, activeUntil = 0;
  bool decided = false, commit = false, struck = false, hang = false;
  std::string why;
  std::unique_ptr<InjectedFault> active;  // removed on every way out
  while (true) {
    if (interrupted()) return TIDE_ERROR(Code::kCancelled, "chaos: interrupted");
    const double now = nowSeconds();
    if (pauseAt == 0 && store->get(pauseKey, 0).isOk()) pauseAt = now;
    if (timed && !struck && pauseAt > 0 && now >= pauseAt + f->at * estimate()) {
      struck = true;
      TIDE_RETURN_IF_ERROR(strike(*f, r, active));
      activeUntil = now + f->seconds;
    }
    if (active && now >= activeUntil) {
      TIDE_RETURN_IF_ERROR(active->end());
      active.reset();
    }
    TIDE_RETURN_IF_ERROR(poll(r));
    if (!decided) {
      if (store->get(chaos::allReadyKey(n), 0).isOk()) {
        decided = commit = true;
        readyAt = now;
        store->hostedServer()->set(chaos::decisionKey(n), "commit");
      } else if (std::string failed = r.failure(); !failed.empty() || r.complete()) {
        decided = true;
        why = failed.empty() ? "every rank left before the commit" : failed;
        // The decision first: ranks at the gate must not see the abort key alone.
        store->hostedServer()->set(chaos::decisionKey(n), "abort");
        abortEpoch("update " + std::to_string(step) + " abandoned: " + why);
      }
    }
    if (decided && r.complete() && !active) break;
    if (deadline.expired()) {
      hang = true;
      if (!decided) {
        decided = true;
        why = "out of time";
        store->hostedServer()->set(chaos::decisionKey(n), "abort");
        abortEpoch("update " + std::to_string(step) + " ran out of time");
      }
      active.reset();
      for (int k = 0; k < world; ++k) {
        if (!r.replies[k]) procs[k]->kill();
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(kPollSeconds));
  }
  if (timed && !struck) ++window.missed[f->kind];
  const double seconds = nowSeconds() - t0;
  window.updateSeconds.push_back(seconds);
  ++window.updates;
  if (hang) {
    ++window.hangs;
    violation("update " + std::to_string(attempt) + " (version " + std::to_string(step) +
              ") did not end within " + std::to_string(bound()) + " s");
  }
  bool storeLoss = false;
  if (f && f->kind == FaultKind::kStoreNodeLoss) {
    storeLoss = store->get(execPrefix + storeKey(step, "node-dropped"), 0).isOk();
    ++(storeLoss ? window.injected : window.missed)[f->kind];
  }
  if (commit) {
    committed = step;
    ++window.committed;
    if (!f && pauseAt > 0) cleanSeconds.push_back(readyAt - pauseAt);
    if (cleanSeconds.size() > 64) cleanSeconds.erase(cleanSeconds.begin());
  } else {
    ++window.abandoned;
    event("update " + std::to_string(attempt) + " (version " + std::to_string(step) +
          ") abandoned: " + why);
  }
  const std::string where = "update " + std::to_string(attempt) + " (version " +
                            std::to_string(step) + (commit ? ", committed)" : ", abandoned)");
  for (int k = 0; k < world; ++k) {
    if (r.replies[k]) TIDE_RETURN_IF_ERROR(check(k, *r.replies[k], committed, where));
  }
  for (auto it = expected.begin(); it != expected.end();) {
    it = it->first.second < committed - 1 ? expected.erase(it) : std::next(it);
  }
  // Keys nobody reads again.
  erase(chaos::commandPrefix(n));
  erase(execPrefix + "step" + std::to_string(step) + "/");
  if (step >= 2) erase(execPrefix + storeKey(step - 2, ""));
  bool restarted = false;
  for (int k = 0; k < world; ++k) restarted |= !procs[k]->running();
  TIDE_RETURN_IF_ERROR(restartDead());
  // A failed update, a new process, or a store node gone: all ranks rebuild.
  if (!commit || restarted || storeLoss || updateEpoch != epoch) {
    TIDE_RETURN_IF_ERROR(startEpoch(attempt + 1));
  }
  return Status::ok();
}

Status ChaosDriver::State::stopAll() {
  Command c;
  c.kind = CommandKind::kStop;
  Round r = newRound(post(c));
  const Deadline deadline = Deadline::after(o.timeoutSeconds + kMarginSeconds);
  while (!deadline.expired()) {
    TIDE_RETURN_IF_ERROR(poll(r));
    bool exited = true;
    for (auto& p : procs) exited &= !p->running();
    if (exited) return Status::ok();
    std::this_thread::sleep_for(std::chrono::duration<double>(kPollSeconds));
  }
  for (auto& p : procs) p->kill();
  return TIDE_ERROR(Code::kTimeout, "chaos: ranks did not exit after stop");
}

ChaosDriver::ChaosDriver(const plan::TransferPlan& plan, const std::vector<RankLayout>& layouts,
                         const workloads::SyntheticWeights& weights, const FaultSchedule& schedule,
                         EmulatedCluster* cluster, ChaosDriverOptions options)
    : s_(std::make_unique<State>(plan, layouts, weights, schedule, cluster, std::move(options))) {}

ChaosDriver::~ChaosDriver() = default;

Result<ChaosResult> ChaosDriver::run() {
  State& s = *s_;
  if (s.o.updates < 1) return TIDE_ERROR(Code::kInvalidArgument, "chaos: no updates to run");
  if (s.o.reportEvery < 1) return TIDE_ERROR(Code::kInvalidArgument, "chaos: bad report interval");
  s.world = static_cast<int>(s.plan.ranks.size());
  s.token = randomToken();
  TIDE_ASSIGN_OR_RETURN(s.store, TcpStore::host(s.o.masterAddr, 0, s.token));
  s.procs.resize(s.world);
  s.original.assign(s.world, 1);
  for (int r = 0; r < s.world; ++r) TIDE_RETURN_IF_ERROR(s.spawn(r));
  s.window.firstUpdate = 1;
  TIDE_RETURN_IF_ERROR(s.startEpoch(1));
  s.result.start = s.sample();
  for (int a = 1; a <= s.o.updates; ++a) {
    TIDE_RETURN_IF_ERROR(s.runUpdate(a));
    if (a % s.o.reportEvery != 0 && a != s.o.updates) continue;
    s.window.lastUpdate = a;
    s.window.processes = s.sample();
    s.result.total.add(s.window);
    if (s.o.onWindow) s.o.onWindow(s.window);
    s.result.windows.push_back(std::move(s.window));
    s.window = ChaosWindow{};
    s.window.firstUpdate = a + 1;
  }
  s.result.finalVersion = s.committed;
  checkGrowth(s.result);
  TIDE_RETURN_IF_ERROR(s.stopAll());
  return std::move(s.result);
}

}  // namespace tide::exec
