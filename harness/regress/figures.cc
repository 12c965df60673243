#include "harness/regress/figures.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "engine/plan/lower_bound.h"
#include "harness/sim/scenario_plans.h"
#include "harness/workload_options.h"
#include "sim/report.h"

namespace tide::harness::regress {
namespace {

std::string digest(const std::string& text) {
  return fmt::format("{:016x}", XXH3_64bits(text.data(), text.size()));
}

// The model as planned: every tensor's name, shape and bytes on both sides.
std::string modelDigest(const workloads::ModelSpec& spec) {
  const auto inv = workloads::buildInventory(spec);
  std::string text = spec.name + "/" + std::to_string(spec.scale);
  for (const auto& t : inv.tensors) {
    text += "\n" + t.name;
    for (auto d : t.shape) text += " " + std::to_string(d);
    text += " " + std::to_string(t.trainBytes()) + " " + std::to_string(t.inferBytes());
  }
  return digest(text);
}

std::string clusterDigest(const workloads::ClusterSpec& c) {
  nlohmann::json j = {{"name", c.name},
                      {"nodes", c.nodes},
                      {"gpus_per_node", c.gpusPerNode},
                      {"nics_per_node", c.nicsPerNode},
                      {"nic", c.nicBps},
                      {"nvlink", c.nvlinkBps},
                      {"pcie_h2d", c.pcieH2DBps},
                      {"pcie_d2h", c.pcieD2HBps},
                      {"host_mem", c.hostMemBps},
                      {"hbm", c.hbmBps},
                      {"storage", c.storageBps},
                      {"nodes_per_leaf", c.fabric.nodesPerLeaf},
                      {"oversubscription", c.fabric.oversubscription},
                      {"latency", c.fabric.latencySeconds},
                      {"gpu_nic", c.gpuNic}};
  return digest(j.dump());
}

// A metric name part: bare-key characters only.
std::string keyPart(std::string s) {
  for (auto& ch : s)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-')) ch = '_';
  return s;
}

}  // namespace

Result<FigureSet> measureScenario(const std::string& path) {
  TIDE_ASSIGN_OR_RETURN(sim::Scenario sc, loadCheckedScenario(path));
  FigureSet out;
  const std::string source = "sim." + keyPart(sc.name);
  const nlohmann::json in = sim::scenarioInputsJson(sc);
  InputDigests& d = out.inputs[source];
  d["model"] = modelDigest(sc.model);
  d["layouts"] = digest(in.value("train_layout", "") + "|" + in["train_nodes"].dump() + "|" +
                        in.value("infer_layout", "") + "|" + in["infer_nodes"].dump() + "|" +
                        in["infer_first_gpu"].dump());
  d["cluster"] = digest(in["cluster"].dump());
  d["strategy"] = digest(in["strategy"].dump());
  // The profiles that priced the strategies, each as applied.
  std::string priced;
  for (const auto& name : sc.strategy.names) {
    TIDE_ASSIGN_OR_RETURN(sim::StrategyResult r, simulateStrategy(sc, name));
    priced += r.toJson()["profile"].dump() + "|";
    const std::string p = source + "." + keyPart(name) + ".";
    out.figures.push_back({p + "update_s", "s", r.seconds});
    out.figures.push_back({p + "lower_bound_s", "s", r.lowerBoundSeconds});
    out.figures.push_back({p + "transfer_s", "s", r.transferSeconds});
    out.figures.push_back({p + "finalize_s", "s", r.finalizeSeconds});
    out.figures.push_back({p + "wire_bytes", "B", r.wireBytes});
  }
  d["profile"] = digest(priced);
  return out;
}

Result<FigureSet> measurePlan(const PlanProblem& pp) {
  WorkloadOptions o;
  o.model = pp.model;
  o.scale = pp.scale;
  o.train = pp.train;
  o.infer = pp.infer;
  o.cluster = pp.cluster;
  o.strategy = pp.strategy;
  o.inferDtype = "bf16";  // as `tide plan`: what a real run moves
  TIDE_ASSIGN_OR_RETURN(auto w, loadWorkload(o));
  TIDE_ASSIGN_OR_RETURN(plan::TransferPlan p, w->makePlan());
  TIDE_ASSIGN_OR_RETURN(plan::LowerBound lb, plan::lowerBound(p, boundCluster(w->cluster)));
  const plan::PlanSummary s = p.summarize();
  FigureSet out;
  const std::string source = "plan." + keyPart(pp.name);
  InputDigests& d = out.inputs[source];
  d["model"] = modelDigest(w->spec);
  d["layouts"] = digest(w->train.toString() + "|" + w->infer.toString());
  d["cluster"] = clusterDigest(w->cluster);
  d["strategy"] = digest(pp.strategy + "|" + std::to_string(w->strategyOptions.bucketBytes) + "|" +
                         std::to_string(w->strategyOptions.chunkBytes));
  const std::string pre = source + ".";
  uint64_t maxSent = 0, maxRecv = 0;
  for (auto b : s.sentBytes) maxSent = std::max(maxSent, b);
  for (auto b : s.receivedBytes) maxRecv = std::max(maxRecv, b);
  out.figures.push_back({pre + "moves", "moves", double(s.moves)});
  out.figures.push_back({pre + "network_bytes", "B", double(s.bytesByPath[2])});
  out.figures.push_back({pre + "intra_node_bytes", "B", double(s.bytesByPath[1])});
  out.figures.push_back({pre + "local_bytes", "B", double(s.bytesByPath[0])});
  out.figures.push_back({pre + "max_sent_bytes", "B", double(maxSent)});
  out.figures.push_back({pre + "max_received_bytes", "B", double(maxRecv)});
  out.figures.push_back({pre + "lower_bound_s", "s", lb.seconds});
  out.figures.push_back({pre + "bottleneck_bytes", "B", double(lb.bottleneck.bytes)});
  return out;
}

}  // namespace tide::harness::regress
