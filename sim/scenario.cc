#include "sim/scenario.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "engine/core/units.h"
#include "sim/cost_profile.h"
#include "workloads/toml_fields.h"

namespace tide::sim {

namespace {

using workloads::detail::invalidAt;
using workloads::detail::TomlFields;

std::string tableOrigin(std::string_view origin, const char* table) {
  return std::string(origin) + " [" + table + "]";
}

// A size: "1GB", "4KiB" or an integer number of bytes; never zero.
Status sizeField(TomlFields& f, const char* key, uint64_t& out) {
  const toml::node* n = f.get(key);
  if (!n) return Status::ok();
  uint64_t v = 0;
  if (auto i = n->value_exact<int64_t>()) {
    v = *i > 0 ? static_cast<uint64_t>(*i) : 0;
  } else if (auto s = n->value_exact<std::string>()) {
    auto r = parseSize(*s);
    if (!r) return f.error(key, r.status().message());
    v = *r;
  } else {
    return f.error(key, "must be a size such as \"1GB\"");
  }
  if (v == 0) return f.error(key, "must be positive");
  out = v;
  return Status::ok();
}

// A rate such as "47.5GB/s" or "400Gbps", in bytes/s.
Status rateField(TomlFields& f, const char* key, double& out) {
  const toml::node* n = f.get(key);
  if (!n) return Status::ok();
  auto s = n->value_exact<std::string>();
  if (!s) return f.error(key, "must be a rate such as \"50GB/s\" or \"400Gbps\"");
  auto r = parseRate(*s);
  if (!r) return f.error(key, r.status().message());
  out = *r;
  return Status::ok();
}

Status nonNegative(TomlFields& f, const char* key, double& out) {
  TIDE_RETURN_IF_ERROR(f.getDouble(key, out, false));
  if (out < 0) return f.error(key, "must not be negative");
  return Status::ok();
}

Result<workloads::ClusterSpec> parseClusterTable(const toml::table& c, std::string_view origin) {
  TomlFields f(c, tableOrigin(origin, "cluster"));
  workloads::ClusterSpec s;
  // `preset` starts from a cluster of workloads/clusters; the keys below
  // override its figures.
  std::string preset;
  TIDE_RETURN_IF_ERROR(f.getString("preset", preset, false));
  if (!preset.empty()) {
    auto p = workloads::loadCluster(preset);
    if (!p.isOk()) return f.error("preset", p.status().message());
    s = std::move(*p);
  } else {
    s.name = "custom";
    s.gpusPerNode = 8;
  }
  TIDE_RETURN_IF_ERROR(f.getString("name", s.name, false));
  TIDE_RETURN_IF_ERROR(f.getInt("gpus_per_node", s.gpusPerNode, 1024, false));
  if (preset.empty()) s.nicsPerNode = s.gpusPerNode;  // a NIC per GPU unless given
  TIDE_RETURN_IF_ERROR(f.getInt("nics_per_node", s.nicsPerNode, 1024, false));
  if (s.gpusPerNode <= 0) return f.error("gpus_per_node", "must be positive");
  if (s.nicsPerNode <= 0) return f.error("nics_per_node", "must be positive");
  TIDE_RETURN_IF_ERROR(rateField(f, "nic", s.nicBps));
  TIDE_RETURN_IF_ERROR(rateField(f, "nvlink", s.nvlinkBps));
  TIDE_RETURN_IF_ERROR(rateField(f, "pcie_h2d", s.pcieH2DBps));
  TIDE_RETURN_IF_ERROR(rateField(f, "pcie_d2h", s.pcieD2HBps));
  TIDE_RETURN_IF_ERROR(rateField(f, "host_mem", s.hostMemBps));
  TIDE_RETURN_IF_ERROR(rateField(f, "hbm", s.hbmBps));
  TIDE_RETURN_IF_ERROR(rateField(f, "storage", s.storageBps));
  for (auto [name, v] : {std::pair{"nic", s.nicBps},
                         {"nvlink", s.nvlinkBps},
                         {"pcie_h2d", s.pcieH2DBps},
                         {"pcie_d2h", s.pcieD2HBps},
                         {"host_mem", s.hostMemBps}}) {
    if (v <= 0) return f.error(name, "is required (no preset gives it)");
  }
  TIDE_RETURN_IF_ERROR(f.getInt("nodes_per_leaf", s.fabric.nodesPerLeaf, 1 << 20, false));
  s.fabric.oversubscription = std::max(1.0, s.fabric.oversubscription);
  TIDE_RETURN_IF_ERROR(f.getDouble("oversubscription", s.fabric.oversubscription, false));
  if (!(s.fabric.oversubscription >= 1.0)) return f.error("oversubscription", "must be >= 1");
  double latUs = s.fabric.latencySeconds > 0 ? s.fabric.latencySeconds * 1e6 : 2.0;
  TIDE_RETURN_IF_ERROR(nonNegative(f, "latency_us", latUs));
  s.fabric.latencySeconds = latUs * 1e-6;
  TIDE_RETURN_IF_ERROR(f.rejectUnknown());
  return s;
}

Result<workloads::ModelSpec> parseModelTable(const toml::table& m, std::string_view origin) {
  TomlFields f(m, tableOrigin(origin, "model"));
  std::string zoo;
  TIDE_RETURN_IF_ERROR(f.getString("zoo", zoo, false));
  if (zoo.empty()) {
    // Explicit dims: the same keys as a workloads model file.
    std::stringstream dims;
    dims << m;
    return workloads::parseModelToml(dims.str(), tableOrigin(origin, "model"));
  }
  auto spec = workloads::loadModel(zoo);
  if (!spec) return f.error("zoo", spec.status().message());
  // The run's quantization block may differ from the checkpoint's.
  uint64_t block = spec->fp8Block;
  TIDE_RETURN_IF_ERROR(f.getU64("fp8_block", block, 4096, false));
  if (block == 0) return f.error("fp8_block", "must be > 0");
  spec->fp8Block = static_cast<uint32_t>(block);
  for (const auto& [k, v] : m) {
    if (k.str() != "zoo" && k.str() != "fp8_block") {
      return f.error(k.str(),
                     "cannot be set for a zoo model (only fp8_block can); copy its file "
                     "from workloads/models/ into [model] without zoo to change dims");
    }
  }
  return spec;
}

// A layout table: `layout` and, optionally, `nodes` (-1 when absent) and,
// for the engines (`colocated` not null), `colocated`.
template <typename Layout, typename Parse>
Status parseLayoutTable(const toml::table& t, std::string_view origin, const char* table,
                        Parse parse, Layout& layout, int& nodes, bool mayShare,
                        bool* colocated = nullptr) {
  TomlFields f(t, tableOrigin(origin, table));
  std::string text;
  TIDE_RETURN_IF_ERROR(f.getString("layout", text, true));
  auto l = parse(text);
  if (!l) return f.error("layout", l.status().message());
  layout = std::move(l).value();
  nodes = -1;
  TIDE_RETURN_IF_ERROR(f.getInt("nodes", nodes, 1 << 20, false));
  if (nodes == 0 && !mayShare) return f.error("nodes", "must be at least 1");
  if (colocated) {
    TIDE_RETURN_IF_ERROR(f.getBool("colocated", *colocated));
    if (*colocated && nodes > 0)
      return f.error("colocated",
                     "puts the engines on the training ranks' GPUs: leave 'nodes' out (or 0)");
  }
  return f.rejectUnknown();
}

Status parseStrategyTable(const toml::table& t, std::string_view origin, bool fp8Model,
                          StrategyParams& p, Calibration& k, std::vector<std::string>& overridden) {
  TomlFields f(t, tableOrigin(origin, "strategy"));
  (void)f.get("profile");  // read before this table: it sets the defaults below
  if (const toml::node* n = f.get("names")) {
    auto* arr = n->as_array();
    if (!arr || arr->empty())
      return f.error("names", "must be a list such as [\"miles-broadcast\", \"miles-p2p\"]");
    p.names.clear();
    for (auto& v : *arr) {
      auto name = v.value_exact<std::string>();
      if (!name || name->empty()) return f.error("names", "must be strategy names");
      p.names.push_back(*name);
    }
  }
  TIDE_RETURN_IF_ERROR(sizeField(f, "bucket", p.options.bucketBytes));
  for (const char* old : {"broadcast_bucket", "p2p_bucket"}) {
    if (t.contains(old))
      return f.error(old, "is replaced by a table per strategy: [strategy.<name>] bucket = ...");
  }
  // [strategy.<name>]: what one strategy's run sets for itself.
  for (auto&& [k, node] : t) {
    const toml::table* own = node.as_table();
    if (!own) continue;
    std::string name(k.str());
    (void)f.get(name);
    TomlFields of(*own, tableOrigin(origin, ("strategy." + name).c_str()));
    uint64_t bucket = 0;
    TIDE_RETURN_IF_ERROR(sizeField(of, "bucket", bucket));
    p.ownBucketBytes[name] = bucket;  // 0: the table names the strategy, sets nothing
    TIDE_RETURN_IF_ERROR(of.rejectUnknown());
  }
  // The wire carries what the engines serve unless told otherwise.
  std::string wire = fp8Model ? "fp8" : "bf16";
  TIDE_RETURN_IF_ERROR(f.getString("wire_dtype", wire, false));
  if (wire != "fp8" && wire != "bf16") return f.error("wire_dtype", "must be \"fp8\" or \"bf16\"");
  if (wire == "fp8" && !fp8Model) {
    return f.error("wire_dtype",
                   "is fp8 but the model serves bf16 (set [model] infer_dtype = \"fp8_e4m3\")");
  }
  p.options.fp8Wire = wire == "fp8";
  TIDE_RETURN_IF_ERROR(f.getBool("first_update", p.options.firstUpdate));
  TIDE_RETURN_IF_ERROR(f.getBool("pipelined", p.options.pipelined));
  double pollMs = k.lockPollSeconds * 1e3;
  if (t.contains("lock_poll_ms")) overridden.push_back("lock_poll");
  TIDE_RETURN_IF_ERROR(nonNegative(f, "lock_poll_ms", pollMs));
  k.lockPollSeconds = pollMs * 1e-3;
  TIDE_RETURN_IF_ERROR(sizeField(f, "page", p.options.pageBytes));
  TIDE_RETURN_IF_ERROR(f.getInt("channels", p.options.channels, 1024, false));
  TIDE_RETURN_IF_ERROR(sizeField(f, "chunk", p.options.chunkBytes));
  TIDE_RETURN_IF_ERROR(f.getInt("max_sim_buckets", p.options.maxStepBuckets, 1 << 20, false));
  if (p.options.maxStepBuckets <= 0) return f.error("max_sim_buckets", "must be positive");
  return f.rejectUnknown();
}

Status parseCalibrationTable(const toml::table& t, std::string_view origin, Calibration& k,
                             std::vector<std::string>& overridden) {
  TomlFields f(t, tableOrigin(origin, "calibration"));
  // Constants that were replaced: an old scenario gets told where the figure
  // went.
  for (auto [key, why] :
       {std::pair{"fp8_quant",
                  "is no longer a calibration constant: FP8 quantization is one pass over the "
                  "GPU's memory, set by [cluster] hbm"},
        std::pair{"postprocess",
                  "is no longer a rate over every rank's bytes: post-processing re-quantizes the "
                  "MLA layers of an FP8 model, set by mla_requant_ms"}}) {
    if (t.contains(key)) return f.error(key, why);
  }
  // Times are plain numbers in the unit their key ends with.
  double opUs = k.hostOpSeconds * 1e6, stepNs = k.pyStepSeconds * 1e9;
  double callMs = k.engineCallSeconds * 1e3, pageUs = k.registerPerPageSeconds * 1e6;
  double requantMs = k.mlaRequantSeconds * 1e3;
  TIDE_RETURN_IF_ERROR(nonNegative(f, "host_op_us", opUs));
  TIDE_RETURN_IF_ERROR(nonNegative(f, "py_step_ns", stepNs));
  TIDE_RETURN_IF_ERROR(nonNegative(f, "engine_call_ms", callMs));
  TIDE_RETURN_IF_ERROR(nonNegative(f, "register_page_us", pageUs));
  TIDE_RETURN_IF_ERROR(nonNegative(f, "mla_requant_ms", requantMs));
  for (auto [key, profileKey] : {std::pair{"host_op_us", "host_op"},
                                 {"py_step_ns", "py_step"},
                                 {"engine_call_ms", "engine_call"},
                                 {"register_page_us", "register_page"},
                                 {"mla_requant_ms", "mla_requant"}})
    if (t.contains(key)) overridden.push_back(profileKey);
  k.hostOpSeconds = opUs * 1e-6;
  k.pyStepSeconds = stepNs * 1e-9;
  k.engineCallSeconds = callMs * 1e-3;
  k.registerPerPageSeconds = pageUs * 1e-6;
  k.mlaRequantSeconds = requantMs * 1e-3;
  return f.rejectUnknown();
}

// 0 for a whole-update figure, else the span's place in the update.
int spanRank(std::string_view span) {
  const auto& spans = Scenario::kSpans;
  auto it = std::find(spans.begin(), spans.end(), span);
  return it == spans.end() ? 0 : static_cast<int>(it - spans.begin()) + 1;
}

// [published.<strategy>]: `update` is the strategy's primary figure,
// `prepare`, `transfer` and `finalize` a span of it, any other key another
// published figure of the same run under that label.
Status parsePublishedTable(const toml::table& t, std::string_view origin, Scenario& s) {
  TomlFields f(t, tableOrigin(origin, "published"));
  for (auto&& [k, node] : t) {
    std::string strategy(k.str());
    const toml::table* figures = node.as_table();
    if (!figures)
      return f.error(strategy, "must be a table of one strategy's figures: [published." + strategy +
                                   "] update = <seconds>");
    (void)f.get(strategy);
    TomlFields of(*figures, tableOrigin(origin, ("published." + strategy).c_str()));
    for (auto&& [fk, fnode] : *figures) {
      std::string key(fk.str());
      double v = 0;
      TIDE_RETURN_IF_ERROR(of.getDouble(key, v, false));
      if (v <= 0) return of.error(key, "must be seconds > 0");
      if (key == "update") {
        s.published.push_back({strategy, "", "", v});
      } else if (spanRank(key) > 0) {
        s.published.push_back({strategy, "", key, v});
      } else {
        s.published.push_back({strategy, key, "", v});
      }
    }
    TIDE_RETURN_IF_ERROR(of.rejectUnknown());
  }
  // The primary figure, the other labelled ones, then the spans in order.
  auto order = [](const Scenario::Published& p) {
    return p.primary() ? 0 : p.span.empty() ? 1 : 1 + spanRank(p.span);
  };
  std::stable_sort(s.published.begin(), s.published.end(),
                   [&](const auto& a, const auto& b) { return order(a) < order(b); });
  return f.rejectUnknown();
}

// Nodes a layout of `ranks` GPUs fills; `given` must be that (-1: not given).
Result<int> layoutNodes(int given, int ranks, int gpusPerNode, std::string_view origin,
                        const char* table) {
  const int need = (ranks + gpusPerNode - 1) / gpusPerNode;
  if (given < 0 || given == need) return need;
  return invalidAt(tableOrigin(origin, table),
                   "'nodes' = " + std::to_string(given) + " but the layout's " +
                       std::to_string(ranks) + " GPUs fill " + std::to_string(need) +
                       " node(s) of " + std::to_string(gpusPerNode) + " GPUs");
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
  TomlFields top(root, std::string(origin));
  Scenario s;
  s.name = "scenario";
  TIDE_RETURN_IF_ERROR(top.getString("name", s.name, false));
  const toml::table* model = nullptr;
  const toml::table* train = nullptr;
  const toml::table* infer = nullptr;
  const toml::table* cluster = nullptr;
  const toml::table* strategy = nullptr;
  const toml::table* calibration = nullptr;
  const toml::table* published = nullptr;
  for (auto [key, t] : {std::pair{"model", &model},
                        {"train", &train},
                        {"infer", &infer},
                        {"cluster", &cluster},
                        {"strategy", &strategy},
                        {"calibration", &calibration},
                        {"published", &published}}) {
    const toml::node* n = top.get(key);
    if (n && !n->is_table()) return top.error(key, std::string("must be a table [") + key + "]");
    *t = n ? n->as_table() : nullptr;
  }
  TIDE_RETURN_IF_ERROR(top.rejectUnknown());
  for (auto [key, t] :
       {std::pair{"model", model}, {"train", train}, {"infer", infer}, {"cluster", cluster}}) {
    if (!t) return invalidAt(origin, std::string("missing [") + key + "]");
  }

  TIDE_ASSIGN_OR_RETURN(s.model, parseModelTable(*model, origin));
  int trainNodes = -1, inferNodes = -1;
  TIDE_RETURN_IF_ERROR(parseLayoutTable(*train, origin, "train", workloads::parseTrainLayout,
                                        s.train, trainNodes, false));
  TIDE_RETURN_IF_ERROR(parseLayoutTable(*infer, origin, "infer", workloads::parseInferLayout,
                                        s.infer, inferNodes, true, &s.colocated));
  if (s.colocated) inferNodes = 0;
  TIDE_ASSIGN_OR_RETURN(s.cluster, parseClusterTable(*cluster, origin));
  const int g = s.cluster.gpusPerNode;
  TIDE_ASSIGN_OR_RETURN(s.trainNodes,
                        layoutNodes(trainNodes, s.train.worldSize(), g, origin, "train"));
  if (inferNodes == 0) {
    s.inferNodes = 0;  // validateScenario checks that they fit
  } else {
    TIDE_ASSIGN_OR_RETURN(s.inferNodes,
                          layoutNodes(inferNodes, s.infer.worldSize(), g, origin, "infer"));
  }
  s.cluster.nodes = s.trainNodes + s.inferNodes;
  if (auto st = workloads::validateCluster(s.cluster); !st.isOk()) {
    return st.withContext(tableOrigin(origin, "cluster"));
  }

  const bool fp8Model = s.model.inferDtype == workloads::DType::kFP8E4M3;
  s.strategy.options.fp8Wire = fp8Model;
  // The cost profile gives every non-wire cost; [strategy] and [calibration]
  // may override some of them for this scenario.
  if (strategy) {
    if (const toml::node* n = strategy->get("profile")) {
      auto name = n->value_exact<std::string>();
      if (!name) return invalidAt(origin, "[strategy] profile must be a string");
      s.profileName = *name;
      s.profileGiven = true;
    }
  }
  {
    auto profile = loadProfile(s.profileName);
    if (!profile.isOk()) return profile.status().withContext(tableOrigin(origin, "strategy"));
    s.calib = profile->calib;
    s.profile = std::move(profile).value();
  }
  if (strategy)
    TIDE_RETURN_IF_ERROR(
        parseStrategyTable(*strategy, origin, fp8Model, s.strategy, s.calib, s.overriddenKeys));
  if (calibration)
    TIDE_RETURN_IF_ERROR(parseCalibrationTable(*calibration, origin, s.calib, s.overriddenKeys));
  if (published) TIDE_RETURN_IF_ERROR(parsePublishedTable(*published, origin, s));
  if (auto st = validateScenario(s); !st.isOk()) return st.withContext(std::string(origin));
  return s;
}

Result<Scenario> withProfile(const Scenario& s, std::string_view nameOrPath) {
  if (nameOrPath == s.profileName) return s;
  TIDE_ASSIGN_OR_RETURN(CostProfile profile, loadProfile(nameOrPath));
  Scenario out = s;
  out.profileName = std::string(nameOrPath);
  out.calib = profile.calib;
  for (const auto& key : s.overriddenKeys)
    setCalibrationSeconds(out.calib, key, calibrationSeconds(s.calib, key));
  out.profile = std::move(profile);
  return out;
}

Status validateScenario(const Scenario& s) {
  const int g = s.cluster.gpusPerNode;
  if (auto st = workloads::validate(s.train, s.model); !st.isOk()) {
    return st.withContext("[train] layout");
  }
  if (auto st = workloads::validate(s.infer, s.model); !st.isOk()) {
    return st.withContext("[infer] layout");
  }
  if (s.colocated && s.infer.worldSize() != s.train.worldSize()) {
    return TIDE_ERROR(Code::kInvalidArgument,
                      "[infer] colocated = true puts inference rank i on training rank i's GPU, "
                      "but the layouts have " +
                          std::to_string(s.infer.worldSize()) + " inference and " +
                          std::to_string(s.train.worldSize()) + " training ranks");
  }
  if (!s.colocated && s.sharesTrainNodes() &&
      s.train.worldSize() + s.infer.worldSize() > s.trainNodes * g) {
    return TIDE_ERROR(Code::kInvalidArgument,
                      "[infer] nodes = 0 puts the engines on the training nodes, but " +
                          std::to_string(s.train.worldSize()) + " training and " +
                          std::to_string(s.infer.worldSize()) + " inference GPUs exceed their " +
                          std::to_string(s.trainNodes * g) +
                          " GPUs; give the engines nodes of their own ([infer] nodes >= 1)");
  }
  for (auto [table, nodes, ranks] : {std::tuple{"train", s.trainNodes, s.train.worldSize()},
                                     {"infer", s.inferNodes, s.infer.worldSize()}}) {
    if (std::string_view(table) == "infer" && s.sharesTrainNodes()) continue;
    if (nodes * g < ranks) {
      return TIDE_ERROR(Code::kInvalidArgument,
                        std::string("[") + table + "] nodes = " + std::to_string(nodes) + " hold " +
                            std::to_string(nodes * g) + " GPUs; the layout needs " +
                            std::to_string(ranks));
    }
  }
  const bool fp8Model = s.model.inferDtype == workloads::DType::kFP8E4M3;
  if (s.strategy.options.fp8Wire && !fp8Model) {
    return TIDE_ERROR(Code::kInvalidArgument, "fp8 on the wire but the model serves bf16");
  }
  return Status::ok();
}

}  // namespace tide::sim
