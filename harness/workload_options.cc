#include "harness/workload_options.h"

#include "engine/core/units.h"

namespace tide::harness {

void WorkloadOptions::addTo(CLI::App* cmd) {
  OptionRegistrar r(cmd);
  visit(*this, r);
}

void WorkloadOptions::addInferDtypeTo(CLI::App* cmd) {
  cmd->add_option("--infer-dtype", inferDtype, "bf16 | model (the model's inference dtype)")
      ->capture_default_str();
}

Result<std::unique_ptr<Workload>> loadWorkload(const WorkloadOptions& o) {
  if (o.scale < 1) return TIDE_ERROR(Code::kInvalidArgument, "--scale must be >= 1");
  if (o.fp8Block < 0) return TIDE_ERROR(Code::kInvalidArgument, "--fp8-block must be >= 0");
  if (o.inferDtype != "bf16" && o.inferDtype != "model") {
    return TIDE_ERROR(Code::kInvalidArgument, "--infer-dtype must be bf16 or model");
  }
  sync::UpdateSpec u;
  u.modelName = o.model;
  TIDE_ASSIGN_OR_RETURN(auto spec, workloads::loadModel(o.model));
  if (o.fp8Block > 0) spec.fp8Block = static_cast<uint32_t>(o.fp8Block);
  // The executor moves bf16 shards: serving the update in bf16 keeps the shapes.
  if (o.inferDtype == "bf16") spec.inferDtype = workloads::DType::kBF16;
  TIDE_ASSIGN_OR_RETURN(u.model, workloads::scaled(spec, o.scale));
  TIDE_ASSIGN_OR_RETURN(u.train, workloads::parseTrainLayout(o.train));
  TIDE_ASSIGN_OR_RETURN(u.infer, workloads::parseInferLayout(o.infer));
  TIDE_ASSIGN_OR_RETURN(u.cluster, workloads::loadCluster(o.cluster));
  TIDE_ASSIGN_OR_RETURN(u.strategy, sync::findStrategy(o.strategy));
  u.options.fp8Wire = u.model.inferDtype == workloads::DType::kFP8E4M3;
  TIDE_ASSIGN_OR_RETURN(u.options.bucketBytes, parseSize(o.bucket));
  TIDE_ASSIGN_OR_RETURN(u.options.chunkBytes, parseSize(o.chunk));
  if (u.options.bucketBytes == 0 || u.options.chunkBytes == 0) {
    return TIDE_ERROR(Code::kInvalidArgument, "--bucket and --chunk must be > 0");
  }
  if (o.channels < 0) return TIDE_ERROR(Code::kInvalidArgument, "--channels must be >= 0");
  u.options.channels = o.channels;
  u.placement = plan::Placement{u.cluster.gpusPerNode, o.colocated};
  return sync::UpdateProblem::build(std::move(u));
}

std::string sizeFlag(uint64_t bytes) {
  // Exact, so that it parses back to the same bytes (formatBytes rounds).
  static const char* kUnits[] = {"", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (u < 4 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++u;
  }
  return std::to_string(bytes) + kUnits[u];
}

workloads::ClusterSpec boundCluster(const workloads::ClusterSpec& c) {
  workloads::ClusterSpec b = c;
  if (c.kind == workloads::ClusterKind::kEmulated) {
    b.nvlinkBps = b.pcieD2HBps = b.pcieH2DBps = b.hostMemBps = 1e15;
  }
  return b;
}

}  // namespace tide::harness
