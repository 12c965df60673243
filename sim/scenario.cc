#include "sim/scenario.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "engine/core/units.h"
#include "workloads/toml_fields.h"

namespace tide::sim {

namespace {

Status bad(std::string_view origin, const std::string& msg) {
  return TIDE_ERROR(Code::kInvalidArgument, std::string(origin) + ": " + msg);
}

// Reads a size ("1GB", "4KiB" or an integer of bytes).
Result<uint64_t> sizeField(const toml::table& t, const char* key, uint64_t dflt,
                           std::string_view origin) {
  auto n = t[key];
  if (!n) return dflt;
  if (auto i = n.value<int64_t>()) {
    if (*i <= 0) return bad(origin, std::string(key) + " must be positive");
    return static_cast<uint64_t>(*i);
  }
  if (auto s = n.value<std::string>()) {
    auto r = parseSize(*s);
    if (!r) return r.status().withContext(std::string(origin) + ": " + key);
    return r;
  }
  return bad(origin, std::string(key) + " must be a size such as \"1GB\"");
}

// Reads a rate ("400Gbps", "47.5GB/s") into bytes/s.
Result<double> rateField(const toml::table& t, const char* key, double dflt,
                         std::string_view origin) {
  auto n = t[key];
  if (!n) return dflt;
  if (auto s = n.value<std::string>()) {
    auto r = parseRate(*s);
    if (!r) return r.status().withContext(std::string(origin) + ": " + key);
    return r;
  }
  return bad(origin, std::string(key) + " must be a rate such as \"50GB/s\"");
}

Result<double> numField(const toml::table& t, const char* key, double dflt,
                        std::string_view origin) {
  auto n = t[key];
  if (!n) return dflt;
  if (auto d = n.value<double>()) {
    if (*d < 0) return bad(origin, std::string(key) + " must not be negative");
    return *d;
  }
  return bad(origin, std::string(key) + " must be a number");
}

Result<workloads::ClusterSpec> parseClusterTable(const toml::table& c, std::string_view origin) {
  workloads::ClusterSpec s;
  // `preset` starts from a cluster of workloads/clusters; the keys below
  // override its figures.
  auto preset = c["preset"].value<std::string>();
  if (preset) {
    auto p = workloads::loadCluster(*preset);
    if (!p.isOk()) return bad(origin, "cluster.preset: " + p.status().message());
    s = std::move(*p);
  } else {
    s.name = "custom";
    s.gpusPerNode = 8;
  }
  s.name = c["name"].value_or(s.name);
  s.gpusPerNode = static_cast<int>(c["gpus_per_node"].value_or(int64_t{s.gpusPerNode}));
  int defNics = preset ? s.nicsPerNode : s.gpusPerNode;
  s.nicsPerNode = static_cast<int>(c["nics_per_node"].value_or(int64_t{defNics}));
  if (s.gpusPerNode <= 0 || s.nicsPerNode <= 0)
    return bad(origin, "cluster: gpus_per_node and nics_per_node must be positive");
  TIDE_ASSIGN_OR_RETURN(s.nicBps, rateField(c, "nic", s.nicBps, origin));
  TIDE_ASSIGN_OR_RETURN(s.nvlinkBps, rateField(c, "nvlink", s.nvlinkBps, origin));
  TIDE_ASSIGN_OR_RETURN(s.pcieH2DBps, rateField(c, "pcie_h2d", s.pcieH2DBps, origin));
  TIDE_ASSIGN_OR_RETURN(s.pcieD2HBps, rateField(c, "pcie_d2h", s.pcieD2HBps, origin));
  TIDE_ASSIGN_OR_RETURN(s.hostMemBps, rateField(c, "host_mem", s.hostMemBps, origin));
  TIDE_ASSIGN_OR_RETURN(s.storageBps, rateField(c, "storage", s.storageBps, origin));
  for (auto [name, v] : {std::pair{"nic", s.nicBps},
                         {"nvlink", s.nvlinkBps},
                         {"pcie_h2d", s.pcieH2DBps},
                         {"pcie_d2h", s.pcieD2HBps},
                         {"host_mem", s.hostMemBps}}) {
    if (v <= 0) return bad(origin, std::string("cluster.") + name + " is required and must be > 0");
  }
  s.fabric.nodesPerLeaf =
      static_cast<int>(c["nodes_per_leaf"].value_or(int64_t{s.fabric.nodesPerLeaf}));
  TIDE_ASSIGN_OR_RETURN(
      s.fabric.oversubscription,
      numField(c, "oversubscription", std::max(1.0, s.fabric.oversubscription), origin));
  if (s.fabric.oversubscription < 1.0) return bad(origin, "cluster.oversubscription must be >= 1");
  double defLatUs = s.fabric.latencySeconds > 0 ? s.fabric.latencySeconds * 1e6 : 2.0;
  TIDE_ASSIGN_OR_RETURN(double latUs, numField(c, "latency_us", defLatUs, origin));
  s.fabric.latencySeconds = latUs * 1e-6;
  return s;
}

}  // namespace

Result<Scenario> loadScenario(const std::string& path) {
  std::ifstream in(path);
  if (!in) return TIDE_ERROR(Code::kNotFound, "cannot open scenario " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return parseScenario(ss.str(), path);
}

Result<Scenario> parseScenario(std::string_view text, std::string_view origin) {
  // The workloads reader: tide's TOML subset only, one error with the line.
  TIDE_ASSIGN_OR_RETURN(toml::table root, workloads::detail::parseToml(text, origin));
  Scenario s;
  s.name = root["name"].value_or(std::string("scenario"));

  auto* model = root["model"].as_table();
  if (!model) return bad(origin, "missing [model]");
  if (auto zoo = (*model)["zoo"].value<std::string>()) {
    auto m = workloads::loadModel(*zoo);
    if (!m) return m.status().withContext(std::string(origin) + ": model.zoo");
    s.model = std::move(m).value();
    // The run's quantization block may differ from the checkpoint's.
    if (auto blk = (*model)["fp8_block"].value<int64_t>()) {
      if (*blk <= 0) return bad(origin, "model.fp8_block must be > 0");
      s.model.fp8Block = static_cast<uint32_t>(*blk);
    }
  } else {
    // Explicit dims: the same keys as a workloads model file.
    std::stringstream dims;
    dims << *model;
    auto m = workloads::parseModelToml(dims.str(), std::string(origin) + " [model]");
    if (!m) return m.status();
    s.model = std::move(m).value();
  }

  auto* train = root["train"].as_table();
  auto* infer = root["infer"].as_table();
  if (!train || !infer) return bad(origin, "missing [train] or [infer]");
  auto tl = workloads::parseTrainLayout((*train)["layout"].value_or(std::string()));
  if (!tl) return tl.status().withContext(std::string(origin) + ": train.layout");
  s.train = std::move(tl).value();
  auto il = workloads::parseInferLayout((*infer)["layout"].value_or(std::string()));
  if (!il) return il.status().withContext(std::string(origin) + ": infer.layout");
  s.infer = std::move(il).value();

  auto* cluster = root["cluster"].as_table();
  if (!cluster) return bad(origin, "missing [cluster]");
  TIDE_ASSIGN_OR_RETURN(s.cluster, parseClusterTable(*cluster, origin));
  int g = s.cluster.gpusPerNode;
  s.trainNodes =
      static_cast<int>((*train)["nodes"].value_or(int64_t{(s.train.worldSize() + g - 1) / g}));
  s.inferNodes =
      static_cast<int>((*infer)["nodes"].value_or(int64_t{(s.infer.worldSize() + g - 1) / g}));
  s.cluster.nodes = s.trainNodes + s.inferNodes;

  if (auto* st = root["strategy"].as_table()) {
    StrategyParams& p = s.strategy;
    if (auto* arr = (*st)["names"].as_array()) {
      p.names.clear();
      for (auto& v : *arr) {
        auto n = v.value<std::string>();
        if (!n) return bad(origin, "strategy.names must be strings");
        p.names.push_back(*n);
      }
    }
    TIDE_ASSIGN_OR_RETURN(p.bucketBytes, sizeField(*st, "bucket", p.bucketBytes, origin));
    std::string wire = (*st)["wire_dtype"].value_or(std::string("fp8"));
    if (wire != "fp8" && wire != "bf16") return bad(origin, "strategy.wire_dtype: fp8 or bf16");
    p.fp8Wire = wire == "fp8";
    p.firstUpdate = (*st)["first_update"].value_or(false);
    p.pipelined = (*st)["pipelined"].value_or(false);
    TIDE_ASSIGN_OR_RETURN(p.pageBytes, sizeField(*st, "page", p.pageBytes, origin));
    p.channels = static_cast<int>((*st)["channels"].value_or(int64_t{0}));
    TIDE_ASSIGN_OR_RETURN(p.chunkBytes, sizeField(*st, "chunk", p.chunkBytes, origin));
    p.maxSimBuckets = static_cast<int>((*st)["max_sim_buckets"].value_or(int64_t{64}));
    if (p.channels < 0 || p.maxSimBuckets <= 0)
      return bad(origin, "strategy.channels >= 0 and max_sim_buckets > 0");
  }
  if (auto* c = root["calibration"].as_table()) {
    Calibration& k = s.calib;
    TIDE_ASSIGN_OR_RETURN(k.quantBps, rateField(*c, "fp8_quant", k.quantBps, origin));
    TIDE_ASSIGN_OR_RETURN(double opUs, numField(*c, "host_op_us", k.hostOpSeconds * 1e6, origin));
    if (opUs < 0) return bad(origin, "calibration.host_op_us must be >= 0");
    k.hostOpSeconds = opUs * 1e-6;
    TIDE_ASSIGN_OR_RETURN(double stepNs, numField(*c, "py_step_ns", k.pyStepSeconds * 1e9, origin));
    if (stepNs < 0) return bad(origin, "calibration.py_step_ns must be >= 0");
    k.pyStepSeconds = stepNs * 1e-9;
    TIDE_ASSIGN_OR_RETURN(double callMs,
                          numField(*c, "engine_call_ms", k.engineCallSeconds * 1e3, origin));
    k.engineCallSeconds = callMs * 1e-3;
    TIDE_ASSIGN_OR_RETURN(k.postprocessBps, rateField(*c, "postprocess", k.postprocessBps, origin));
    TIDE_ASSIGN_OR_RETURN(double pageUs,
                          numField(*c, "register_page_us", k.registerPerPageSeconds * 1e6, origin));
    k.registerPerPageSeconds = pageUs * 1e-6;
    for (double v : {k.quantBps, k.postprocessBps}) {
      if (v <= 0) return bad(origin, "calibration rates must be > 0");
    }
  }
  if (auto* pub = root["published"].as_table()) {
    for (auto& [k, v] : *pub) {
      auto d = v.value<double>();
      if (!d || *d <= 0)
        return bad(origin, "published." + std::string(k.str()) + " must be seconds > 0");
      s.published.push_back({std::string(k.str()), *d});
    }
  }
  TIDE_RETURN_IF_ERROR(validateScenario(s));
  return s;
}

Status validateScenario(const Scenario& s) {
  int g = s.cluster.gpusPerNode;
  TIDE_RETURN_IF_ERROR(workloads::validate(s.train, s.model));
  TIDE_RETURN_IF_ERROR(workloads::validate(s.infer, s.model));
  if (s.trainNodes * g < s.train.worldSize())
    return TIDE_ERROR(Code::kInvalidArgument,
                      "training needs " + std::to_string(s.train.worldSize()) + " GPUs but " +
                          std::to_string(s.trainNodes) + " nodes hold " +
                          std::to_string(s.trainNodes * g));
  if (s.inferNodes * g < s.infer.worldSize())
    return TIDE_ERROR(Code::kInvalidArgument,
                      "inference needs " + std::to_string(s.infer.worldSize()) + " GPUs but " +
                          std::to_string(s.inferNodes) + " nodes hold " +
                          std::to_string(s.inferNodes * g));
  for (const auto& n : s.strategy.names) {
    if (n != "broadcast" && n != "p2p")
      return TIDE_ERROR(Code::kInvalidArgument, "unknown strategy '" + n + "' (broadcast, p2p)");
  }
  return Status::ok();
}

}  // namespace tide::sim
