#include "engine/exec/chaos/chaos_worker.h"

#include <memory>

#include "engine/exec/chaos/chaos_protocol.h"
#include "engine/exec/executor/shard_digest.h"
#include "engine/exec/rendezvous/abortable_store.h"

namespace tide::exec {

namespace {

using chaos::Command;
using chaos::CommandKind;
using chaos::Reply;

// One epoch's transport and executor, and the stores under its prefix.
// Members are destroyed in reverse: the executor (its regions) before the
// transport, both before the stores they use.
struct Epoch {
  int number = -1;
  std::unique_ptr<PrefixStore> transportKeys, execKeys;
  std::unique_ptr<AbortableStore> transportStore, execStore;
  std::unique_ptr<transport::Transport> transport;
  std::unique_ptr<RankExecutor> executor;
};

class Worker {
 public:
  Worker(Store& root, const ChaosWorkerSetup& setup) : root_(root), setup_(setup) {}
  Status run();

 private:
  Status startEpoch(const Command& c, Reply& reply);
  Status runUpdate(const Command& c);
  Result<bool> gate();
  void describe(Reply& reply);
  Status answer(int n, const Reply& reply);

  Store& root_;
  const ChaosWorkerSetup& setup_;
  std::unique_ptr<Epoch> epoch_;
  int command_ = 0;            // the command being run
  std::vector<uint8_t> held_;  // the shard served before the current epoch
  int heldVersion_ = -1;
  GenerationStats before_;  // generation totals of the executors torn down
  uint64_t reportedReads_ = 0, reportedTorn_ = 0;
};

Status Worker::run() {
  for (command_ = setup_.firstCommand;; ++command_) {
    auto text = root_.get(chaos::commandKey(command_), setup_.commandWaitSeconds);
    if (!text.isOk()) return text.status().withContext("chaos: no command from the driver");
    TIDE_ASSIGN_OR_RETURN(Command c, Command::decode(*text));
    Reply reply;
    if (c.kind == CommandKind::kStop) {
      epoch_.reset();
      reply.ok = true;
      return answer(command_, reply);
    }
    const Status st = c.kind == CommandKind::kEpoch ? startEpoch(c, reply) : runUpdate(c);
    reply.ok = st.isOk();
    if (!st.isOk()) reply.message = st.toString();
    describe(reply);
    TIDE_RETURN_IF_ERROR(answer(command_, reply));
  }
}

Status Worker::startEpoch(const Command& c, Reply& reply) {
  if (epoch_ && epoch_->executor) {
    // What this rank serves goes on serving in the next epoch.
    const ServedVersion sv = epoch_->executor->serving();
    const auto live = epoch_->executor->liveShard();
    if (sv.version >= 0 && !live.empty()) {
      held_.assign(live.begin(), live.end());
      heldVersion_ = sv.version;
    }
    const GenerationStats g = epoch_->executor->generationTotals();
    before_.reads += g.reads;
    before_.torn += g.torn;
  }
  epoch_.reset();
  auto e = std::make_unique<Epoch>();
  e->number = c.epoch;
  const std::string prefix = chaos::epochPrefix(c.epoch);
  e->transportKeys = std::make_unique<PrefixStore>(root_, prefix + "transport/");
  e->execKeys = std::make_unique<PrefixStore>(root_, prefix + "exec/");
  e->transportStore =
      std::make_unique<AbortableStore>(*e->transportKeys, root_, chaos::abortKey(c.epoch));
  e->execStore = std::make_unique<AbortableStore>(*e->execKeys, root_, chaos::abortKey(c.epoch));
  transport::TransportConfig tc = setup_.transport;
  tc.store = e->transportStore.get();
  TIDE_ASSIGN_OR_RETURN(e->transport, transport::createTransport(tc));
  ExecOptions o = setup_.exec;
  o.startVersion = c.version;
  const bool resume = heldVersion_ == c.version && !held_.empty();
  o.resumeShard = resume ? held_.data() : nullptr;
  reply.reloaded = !resume && !(*setup_.layouts)[setup_.rank].placed(plan::Space::kInfer).empty();
  o.store.loseNode = c.loseNode;
  o.store.loseStep = c.loseStep;
  o.store.loseDuringImport = c.loseDuringImport;
  o.commitGate = [this](int) { return gate(); };
  AbortableStore* abort = e->execStore.get();
  o.aborted = [abort] { return abort->aborted(); };
  epoch_ = std::move(e);  // the executor's references point into it from here on
  TIDE_ASSIGN_OR_RETURN(epoch_->executor,
                        RankExecutor::create(*setup_.plan, *setup_.layouts, *setup_.weights,
                                             *epoch_->transport, *epoch_->execStore, o));
  return Status::ok();
}

Status Worker::runUpdate(const Command& c) {
  if (!epoch_ || !epoch_->executor || epoch_->number != c.epoch) {
    return TIDE_ERROR(
        Code::kFailedPrecondition,
        "chaos: update in epoch " + std::to_string(c.epoch) + " that this rank has not built");
  }
  return epoch_->executor->runStep(c.version, nullptr).status();
}

// Every rank verified the step: count this one ready, then do what the
// driver decides (it always decides, within its own bound).
Result<bool> Worker::gate() {
  TIDE_ASSIGN_OR_RETURN(int64_t ready, root_.add(chaos::readyKey(command_), 1));
  const int world = static_cast<int>(setup_.plan->ranks.size());
  if (ready == world) TIDE_RETURN_IF_ERROR(root_.set(chaos::allReadyKey(command_), "1"));
  TIDE_ASSIGN_OR_RETURN(std::string d,
                        root_.get(chaos::decisionKey(command_), setup_.commandWaitSeconds));
  return d == "commit";
}

// What the rank serves now, and what generation read since the last reply.
void Worker::describe(Reply& reply) {
  const RankLayout& layout = (*setup_.layouts)[setup_.rank];
  GenerationStats g = before_;
  if (epoch_ && epoch_->executor) {
    RankExecutor& ex = *epoch_->executor;
    const auto live = ex.liveShard();
    const ServedVersion sv = ex.serving();
    if (!live.empty() && sv.version >= 0) {
      reply.served = sv.version;
      reply.digest = shardDigest(layout, live.data());
    }
    const GenerationStats now = ex.generationTotals();
    g.reads += now.reads;
    g.torn += now.torn;
  } else if (heldVersion_ >= 0) {  // between epochs (a failed rebuild): what it still holds
    reply.served = heldVersion_;
    reply.digest = shardDigest(layout, held_.data());
  }
  reply.generationReads = g.reads - reportedReads_;
  reply.tornReads = g.torn - reportedTorn_;
  reportedReads_ = g.reads;
  reportedTorn_ = g.torn;
}

Status Worker::answer(int n, const Reply& reply) {
  TIDE_RETURN_IF_ERROR(root_.set(chaos::replyKey(n, setup_.rank), reply.encode()));
  return root_.add(chaos::repliesKey(n), 1).status();
}

}  // namespace

Status runChaosWorker(Store& root, const ChaosWorkerSetup& setup) {
  Worker w(root, setup);
  return w.run();
}

}  // namespace tide::exec
