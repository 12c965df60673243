#pragma once
// The options every command that plans a weight update shares (tide plan,
// tide sync, tide sim): model, layouts, cluster, strategy. addTo() registers
// the flags; loadWorkload() turns them into a validated base plan, reshard
// and strategy problem, failing with one clear reason.

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "engine/core/status.h"
#include "engine/plan/reshard.h"
#include "engine/plan/transfer_plan.h"
#include "engine/sync/strategy.h"
#include "engine/sync/strategy_registry.h"
#include "engine/sync/update_problem.h"
#include "harness/option_table.h"
#include "workloads/cluster.h"
#include "workloads/layout.h"
#include "workloads/model.h"

namespace tide::harness {

// A size as a flag takes it ("512KiB").
std::string sizeFlag(uint64_t bytes);

struct WorkloadOptions {
  std::string model = "kimi-k2";
  int scale = 1;
  std::string train = "tp=8,pp=8,cp=4,ep=32";
  std::string infer = "engines=8,tp=32,ep=32,dp_attn=8,dp_lm_head=1,dense_tp=1";
  std::string cluster = "h100-ib-8x400";
  std::string strategy = "p2p";
  std::string strategyHelp;  // what addTo() says --strategy takes (default: the table's names)
  // Defaults: the plan's own (plan::PlanOptions), written as flags.
  std::string bucket = sizeFlag(plan::PlanOptions{}.bucketBytes);
  std::string chunk = sizeFlag(plan::PlanOptions{}.chunkBytes);
  int channels = 0;
  int fp8Block = 0;  // 0 = the model's
  // Weights on the inference side: "model" (the zoo's, e.g. FP8) or "bf16"
  // (what the executor moves). Registered by addInferDtypeTo() only.
  std::string inferDtype = "model";
  bool colocated = false;

  void addTo(CLI::App* cmd);
  // The options addTo() registers, as a table (option_table.h); Self is
  // WorkloadOptions or const WorkloadOptions.
  template <class Self, class V>
  static void visit(Self& o, V& v) {
    v.option("--model", o.model, "zoo model name or TOML file", kShowDefault);
    v.option("--scale", o.scale, "divide hidden dims by S (structure kept)", kShowDefault);
    v.option("--train", o.train, "training layout, e.g. tp=8,pp=8,cp=4,ep=32[,etp=1][,dp=1]",
             kShowDefault);
    v.option("--infer", o.infer, "inference layout, e.g. engines=8,tp=32,ep=32,dp_attn=8",
             kShowDefault);
    v.option("--cluster", o.cluster, "cluster preset[:nodes=N] or TOML file", kShowDefault);
    v.option("--strategy", o.strategy,
             o.strategyHelp.empty() ? sync::strategyNames() : o.strategyHelp, kShowDefault);
    v.option("--bucket", o.bucket, "bucket size (training-dtype bytes)", kShowDefault);
    v.option("--chunk", o.chunk, "broadcast pipelining chunk", kShowDefault);
    v.option("--channels", o.channels, "broadcast rings (0 = NICs per node)", kShowDefault);
    v.option("--fp8-block", o.fp8Block, "FP8 block-scale edge (0 = the model's)", kShowDefault);
    v.flag("--colocated", o.colocated, "inference ranks share GPUs with training ranks");
  }
  // --infer-dtype, for the commands whose plans must match a real run's.
  void addInferDtypeTo(CLI::App* cmd);
};

// The update the flags describe, built by the one problem builder
// (engine/sync/update_problem.h) that scenarios use too.
using Workload = sync::UpdateProblem;

Result<std::unique_ptr<Workload>> loadWorkload(const WorkloadOptions& o);

// The cluster a plan's lower bound is taken on. On an emulated cluster the
// intra-node paths are memory copies and loopback, which the shaped links do
// not limit: the bound counts the NICs only.
workloads::ClusterSpec boundCluster(const workloads::ClusterSpec& c);

}  // namespace tide::harness
