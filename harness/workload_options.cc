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
  auto w = std::make_unique<Workload>();
  if (o.scale < 1) return TIDE_ERROR(Code::kInvalidArgument, "--scale must be >= 1");
  if (o.fp8Block < 0) return TIDE_ERROR(Code::kInvalidArgument, "--fp8-block must be >= 0");
  if (o.inferDtype != "bf16" && o.inferDtype != "model") {
    return TIDE_ERROR(Code::kInvalidArgument, "--infer-dtype must be bf16 or model");
  }
  TIDE_ASSIGN_OR_RETURN(auto spec, workloads::loadModel(o.model));
  if (o.fp8Block > 0) spec.fp8Block = static_cast<uint32_t>(o.fp8Block);
  // The executor moves bf16 shards: serving the update in bf16 keeps the shapes.
  if (o.inferDtype == "bf16") spec.inferDtype = workloads::DType::kBF16;
  TIDE_ASSIGN_OR_RETURN(w->spec, workloads::scaled(spec, o.scale));
  TIDE_ASSIGN_OR_RETURN(w->train, workloads::parseTrainLayout(o.train));
  TIDE_ASSIGN_OR_RETURN(w->infer, workloads::parseInferLayout(o.infer));
  TIDE_RETURN_IF_ERROR(workloads::validate(w->train, w->spec));
  TIDE_RETURN_IF_ERROR(workloads::validate(w->infer, w->spec));
  TIDE_ASSIGN_OR_RETURN(w->cluster, workloads::loadCluster(o.cluster));
  TIDE_ASSIGN_OR_RETURN(w->descriptor, sync::findStrategy(o.strategy));
  TIDE_ASSIGN_OR_RETURN(w->strategy, w->descriptor->planBuilder());
  w->strategyOptions.fp8Wire = w->spec.inferDtype == workloads::DType::kFP8E4M3;
  TIDE_ASSIGN_OR_RETURN(w->strategyOptions.bucketBytes, parseSize(o.bucket));
  TIDE_ASSIGN_OR_RETURN(w->strategyOptions.chunkBytes, parseSize(o.chunk));
  if (w->strategyOptions.bucketBytes == 0 || w->strategyOptions.chunkBytes == 0) {
    return TIDE_ERROR(Code::kInvalidArgument, "--bucket and --chunk must be > 0");
  }
  if (o.channels < 0) return TIDE_ERROR(Code::kInvalidArgument, "--channels must be >= 0");
  w->strategyOptions.channels = o.channels;

  w->inventory = workloads::buildInventory(w->spec);
  TIDE_ASSIGN_OR_RETURN(w->base,
                        plan::basePlan(w->inventory, w->train, w->infer,
                                       plan::Placement{w->cluster.gpusPerNode, o.colocated}));
  const int nodes = plan::nodesNeeded(w->base, w->cluster.gpusPerNode);
  if (nodes > w->cluster.nodes) {
    return TIDE_ERROR(Code::kInvalidArgument,
                      "cluster " + w->cluster.name + " has " + std::to_string(w->cluster.nodes) +
                          " nodes; the layouts need " + std::to_string(nodes) + " (use --cluster " +
                          w->cluster.name + ":nodes=" + std::to_string(nodes) + ")");
  }
  TIDE_ASSIGN_OR_RETURN(w->reshard, plan::planReshard(w->base));
  return w;
}

workloads::ClusterSpec boundCluster(const workloads::ClusterSpec& c) {
  workloads::ClusterSpec b = c;
  if (c.name.rfind("emulated:", 0) == 0) {
    b.nvlinkBps = b.pcieD2HBps = b.pcieH2DBps = b.hostMemBps = 1e15;
  }
  return b;
}

}  // namespace tide::harness
