#include "python/bindings/weight_sync.h"

#include <algorithm>

#include "engine/core/clock.h"
#include "engine/sync/strategy_registry.h"
#include "engine/transport/registry.h"
#include "python/bindings/array_buffer.h"
#include "python/bindings/data_node.h"
#include "python/bindings/status_error.h"

namespace tide::python {
namespace py = pybind11;

namespace {

workloads::DType weightDtype(const py::array& a, bool bf16, const std::string& name) {
  const data::DType t = dtypeOfArray(a, "weight '" + name + "'");
  if (bf16) {
    if (t != data::DType::kI16) invalid("weight '" + name + "': bf16 travels as an int16 array");
    return workloads::DType::kBF16;
  }
  switch (t) {
    case data::DType::kF16:
      return workloads::DType::kFP16;
    case data::DType::kF32:
      return workloads::DType::kFP32;
    default:
      invalid("weight '" + name + "' is " + std::string(data::dtypeName(t)) +
              "; weight sync moves bf16, fp16 and fp32 tensors");
  }
}

// What every rank must agree on, in order: names, dtypes, shapes.
std::string signature(const workloads::ModelInventory& inv) {
  std::string s;
  for (const auto& t : inv.tensors) {
    s += t.name + ":" + workloads::dtypeName(t.trainDtype);
    for (uint64_t d : t.shape) s += "," + std::to_string(d);
    s += "\n";
  }
  return s;
}

std::string firstDifference(const std::string& mine, const std::string& theirs) {
  size_t a = 0, b = 0;
  while (a < mine.size() || b < theirs.size()) {
    const size_t ea = std::min(mine.find('\n', a), mine.size());
    const size_t eb = std::min(theirs.find('\n', b), theirs.size());
    const std::string x = mine.substr(a, ea - a), y = theirs.substr(b, eb - b);
    if (x != y) {
      return "here '" + (x.empty() ? std::string("(none)") : x) + "', the trainer's '" +
             (y.empty() ? std::string("(none)") : y) + "'";
    }
    a = ea + 1;
    b = eb + 1;
  }
  return "none";
}

// Same tensors on every rank, or one clear error on the trainer and the
// engine before anything connects: each engine says what it found.
Status agreeOnTensors(Store& store, const std::string& sig, const WeightSyncOptions& o) {
  if (o.rank == 0) {
    TIDE_RETURN_IF_ERROR(store.set("signature", sig));
    for (int r = 1; r <= o.engines; ++r) {
      TIDE_ASSIGN_OR_RETURN(std::string v,
                            store.get("verdict/" + std::to_string(r), o.connectTimeoutSeconds));
      if (v != "ok") return TIDE_ERROR(Code::kInvalidArgument, v);
    }
    return Status::ok();
  }
  TIDE_ASSIGN_OR_RETURN(std::string theirs, store.get("signature", o.connectTimeoutSeconds));
  const std::string verdict =
      theirs == sig ? std::string("ok")
                    : "rank " + std::to_string(o.rank) +
                          "'s tensors are not the trainer's (names, dtypes and shapes, in "
                          "order): first difference " +
                          firstDifference(sig, theirs);
  TIDE_RETURN_IF_ERROR(store.set("verdict/" + std::to_string(o.rank), verdict));
  if (verdict != "ok") return TIDE_ERROR(Code::kInvalidArgument, verdict);
  return Status::ok();
}

}  // namespace

std::unique_ptr<WeightSync> WeightSync::create(py::object store, py::dict tensors,
                                               std::vector<std::string> bf16, WeightSyncOptions o) {
  auto& ps = store.cast<PyStore&>();
  if (!ps.store) invalid("the store was closed");
  if (o.engines < 1) invalid("engines must be >= 1");
  if (o.rank < 0 || o.rank > o.engines)
    invalid("rank " + std::to_string(o.rank) + " is not in a sync of 1 trainer and " +
            std::to_string(o.engines) + " engines");
  if (o.timeoutSeconds <= 0 || o.connectTimeoutSeconds <= 0)
    invalid("timeout and connect_timeout must be positive");
  if (tensors.empty()) invalid("no tensors to sync");
  std::unique_ptr<WeightSync> w(new WeightSync());
  w->options_ = o;
  w->storeRef_ = store;

  workloads::ModelInventory inv;
  inv.name = o.name;
  std::vector<std::span<uint8_t>> spans;
  for (auto [key, value] : tensors) {
    const std::string name = py::str(key);
    if (!py::isinstance<py::array>(value)) invalid("weight '" + name + "' is not an array");
    auto a = py::reinterpret_borrow<py::array>(value);
    const bool isBf16 = std::find(bf16.begin(), bf16.end(), name) != bf16.end();
    workloads::TensorSpec t;
    t.name = name;
    t.trainDtype = t.inferDtype = weightDtype(a, isBf16, name);
    if (!(a.flags() & py::array::c_style)) invalid("weight '" + name + "' is not C-contiguous");
    if (o.rank > 0 && !a.writeable()) invalid("weight '" + name + "' is read-only on an engine");
    if (a.ndim() > plan::kMaxDims)
      invalid("weight '" + name + "' has " + std::to_string(a.ndim()) + " dims; at most " +
              std::to_string(plan::kMaxDims));
    for (py::ssize_t d = 0; d < a.ndim(); ++d) t.shape.push_back(static_cast<uint64_t>(a.shape(d)));
    if (t.shape.empty()) t.shape.push_back(1);  // a scalar
    t.kind = workloads::TensorKind::kDenseMlp;
    spans.emplace_back(static_cast<uint8_t*>(a.mutable_data()), static_cast<size_t>(a.nbytes()));
    w->arrays_.append(a);
    inv.tensors.push_back(std::move(t));
  }
  for (const auto& name : bf16) {
    if (inv.find(name) < 0) invalid("bf16 names '" + name + "', which is not a tensor given");
  }

  sync::UpdateSpec u;
  u.modelName = o.name;
  u.model.name = o.name;
  u.infer.engines = o.engines;
  u.cluster = check(workloads::loadCluster(
      "emulated:nodes=1,gpus=" + std::to_string(o.engines + 1) + ",nic=100Gbps"));
  // One host: the trainer's GPU, then the engines'.
  u.placement = plan::Placement{u.cluster.gpusPerNode, false, /*inferFirstGpu=*/1};
  u.strategy = check(sync::findStrategy(o.strategy));
  if (o.bucketBytes > 0) u.options.bucketBytes = o.bucketBytes;
  const std::string sig = signature(inv);
  u.tensors = std::move(inv);
  {
    py::gil_scoped_release nogil;
    w->problem_ = check(sync::UpdateProblem::build(std::move(u)));
    w->plan_ = check(w->problem_->makePlan());
    w->layouts_ = check(exec::RankLayout::buildAll(w->plan_));
    const std::string prefix = "weight-sync/" + o.name + "/";
    w->transportStore_ = std::make_unique<PrefixStore>(*ps.store, prefix + "transport/");
    w->execStore_ = std::make_unique<PrefixStore>(*ps.store, prefix + "exec/");
    check(agreeOnTensors(*w->execStore_, sig, o));
    transport::TransportConfig c;
    c.backend = o.backend;
    c.rank = o.rank;
    c.worldSize = o.engines + 1;
    c.store = w->transportStore_.get();
    c.streams = o.streams;
    c.devices = o.devices;
    c.connectTimeoutSeconds = o.connectTimeoutSeconds;
    c.opTimeoutSeconds = o.timeoutSeconds;
    w->transport_ = check(transport::createTransport(c));
    w->shards_ = check(exec::TensorShards::create(w->plan_, w->layouts_, o.rank, std::move(spans),
                                                  *w->execStore_, o.timeoutSeconds));
    w->unusedWeights_ = std::make_unique<workloads::SyntheticWeights>(
        w->problem_->inventory, workloads::RoutingTrace{}, workloads::RlConfig{}, 0);
    exec::ExecOptions eo;
    eo.timeoutSeconds = o.timeoutSeconds;
    eo.shardSource = w->shards_.get();
    w->executor_ = check(exec::RankExecutor::create(w->plan_, w->layouts_, *w->unusedWeights_,
                                                    *w->transport_, *w->execStore_, eo));
  }
  return w;
}

WeightSync::~WeightSync() {
  close();
}

void WeightSync::requireOpen() const {
  if (!executor_) check(TIDE_ERROR(Code::kFailedPrecondition, "this WeightSync was closed"));
  if (!failed_.empty())
    check(TIDE_ERROR(Code::kFailedPrecondition,
                     "an earlier update failed (" + failed_ +
                         "); the engines kept their last verified weights: create a new "
                         "WeightSync"));
}

py::dict WeightSync::update() {
  requireOpen();
  exec::RankStep s;
  double wall = 0;
  {
    py::gil_scoped_release nogil;
    std::lock_guard<std::mutex> lock(mu_);
    const double t0 = nowSeconds();
    auto r = executor_->runStep(step_ + 1, nullptr);
    Status st = r.status();
    // Only verified bytes reach the engine's tensors.
    if (st.isOk() && !trainer()) {
      st = shards_->unload(layouts_[options_.rank], executor_->liveShard().data());
    }
    if (!st.isOk()) {
      failed_ = st.toString();
      check(st);
    }
    s = *r;
    wall = nowSeconds() - t0;
    ++step_;
  }
  py::dict d;
  d["step"] = step_;
  d["rank"] = options_.rank;
  d["seconds"] = wall;
  d["transfer_seconds"] = s.tEnd - s.tStart;
  d["verify_seconds"] = s.verifySeconds;
  d["bytes_sent"] = s.bytesSent;
  d["bytes_verified"] = s.bytesVerified;
  return d;
}

std::string WeightSync::planJson() const {
  return plan_.toJson().dump();
}

void WeightSync::close() {
  // Without the GIL: tearing down a transport joins its threads.
  py::gil_scoped_release nogil;
  std::lock_guard<std::mutex> lock(mu_);
  executor_.reset();
  shards_.reset();
  transport_.reset();
}

}  // namespace tide::python
