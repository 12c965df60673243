#include "harness/sync_plan_file.h"

#include <algorithm>
#include <vector>

namespace tide::harness {

namespace {

Status refuse(const std::string& file, const std::string& why) {
  return TIDE_ERROR(Code::kInvalidArgument, "--plan " + file + ": " + why);
}

std::vector<std::pair<std::string, std::string>> valuesOf(const WorkloadOptions& o) {
  OptionValues v;
  WorkloadOptions::visit(o, v);
  return v.values();
}

bool sameRank(const plan::RankInfo& a, const plan::RankInfo& b) {
  return a.id == b.id && a.role == b.role && a.node == b.node && a.gpu == b.gpu;
}

bool sameTensor(const plan::TensorInfo& a, const plan::TensorInfo& b) {
  return a.name == b.name && a.shape == b.shape && a.trainDtype == b.trainDtype &&
         a.inferDtype == b.inferDtype && a.fp8Block == b.fp8Block;
}

// The training and inference holdings, in a canonical order.
std::vector<plan::Holding> shardHoldings(const plan::TransferPlan& p) {
  std::vector<plan::Holding> out;
  for (const auto& h : p.holdings) {
    if (h.space == plan::Space::kTrain || h.space == plan::Space::kInfer) out.push_back(h);
  }
  auto key = [](const plan::Holding& h) {
    return std::tuple(h.rank, static_cast<int>(h.space), h.tensor, h.box.lo, h.box.hi);
  };
  std::sort(out.begin(), out.end(), [&](const auto& a, const auto& b) { return key(a) < key(b); });
  return out;
}

}  // namespace

Result<WorkloadOptions> recordedWorkload(const plan::TransferPlan& p, const std::string& file,
                                         const WorkloadOptions& given,
                                         const WorkloadOptions& defaults,
                                         const std::string& inferDtype) {
  const plan::PlanWorkload& w = p.params.workload;
  const plan::PlanOptions& po = p.params.options;
  if (w.model.empty() || w.train.empty() || w.infer.empty()) {
    return refuse(file,
                  "the plan records no workload (model and layouts): tide sync runs the plans "
                  "that tide plan --json writes");
  }
  WorkloadOptions r = defaults;
  r.model = w.model;
  r.scale = w.scale;
  r.train = w.train;
  r.infer = w.infer;
  r.strategy = p.strategy;
  r.bucket = sizeFlag(po.bucketBytes);
  r.chunk = sizeFlag(po.chunkBytes);
  r.channels = po.channels;
  r.fp8Block = static_cast<int>(w.fp8Block);
  r.colocated = w.colocated;
  r.cluster = given.cluster != defaults.cluster ? given.cluster : w.cluster;
  // The served dtype: bf16, or the model's own (checked on the tensors).
  r.inferDtype = w.inferDtype == "bf16" ? "bf16" : "model";
  if (inferDtype != r.inferDtype && inferDtype != "bf16") {
    return refuse(file, "--infer-dtype " + inferDtype + ": the plan serves " + w.inferDtype);
  }
  // A flag left at its default takes the plan's value; one given must agree.
  const auto d = valuesOf(defaults), g = valuesOf(given), want = valuesOf(r);
  for (size_t i = 0; i < g.size(); ++i) {
    const auto& [name, value] = g[i];
    if (name == "--cluster" || value == d[i].second || value == want[i].second) continue;
    return refuse(file, name + " " + value + ": the plan was made with " + name + " " +
                            want[i].second + " (drop the flag: the plan says what the update is)");
  }
  return r;
}

Status checkRecordedPlan(const plan::TransferPlan& p, const std::string& file, const Workload& w) {
  const plan::PlanWorkload& pw = p.params.workload;
  if (pw.gpusPerNode != w.cluster.gpusPerNode) {
    return refuse(file, "the plan places " + std::to_string(pw.gpusPerNode) +
                            " GPUs per node; cluster " + w.cluster.name + " has " +
                            std::to_string(w.cluster.gpusPerNode));
  }
  const plan::TransferPlan& base = w.base;
  if (p.ranks.size() != base.ranks.size()) {
    return refuse(file, "the plan has " + std::to_string(p.ranks.size()) +
                            " ranks; its layouts give " + std::to_string(base.ranks.size()));
  }
  for (size_t i = 0; i < p.ranks.size(); ++i) {
    if (!sameRank(p.ranks[i], base.ranks[i]))
      return refuse(file, "rank " + std::to_string(i) +
                              " is not placed where its layouts put it (role, node, gpu)");
  }
  if (p.tensors.size() != base.tensors.size()) {
    return refuse(file, "the plan has " + std::to_string(p.tensors.size()) + " tensors; model " +
                            pw.model + " has " + std::to_string(base.tensors.size()));
  }
  for (size_t i = 0; i < p.tensors.size(); ++i) {
    if (!sameTensor(p.tensors[i], base.tensors[i]))
      return refuse(file, "tensor " + p.tensors[i].name + " differs from model " + pw.model +
                              "'s (name, shape, dtypes or FP8 block)");
  }
  const auto mine = shardHoldings(p), laid = shardHoldings(base);
  bool same = mine.size() == laid.size();
  for (size_t i = 0; same && i < mine.size(); ++i) {
    same = mine[i].rank == laid[i].rank && mine[i].space == laid[i].space &&
           mine[i].tensor == laid[i].tensor && mine[i].box == laid[i].box &&
           mine[i].dtype == laid[i].dtype;
  }
  if (!same) {
    return refuse(file, "its training and inference holdings are not what its layouts (" +
                            pw.train + " -> " + pw.infer + ") give");
  }
  return Status::ok();
}

}  // namespace tide::harness
