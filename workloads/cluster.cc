#include "workloads/cluster.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "engine/core/units.h"
#include "workloads/embedded.h"
#include "workloads/toml_fields.h"

namespace tide::workloads {

namespace {

Status bad(const std::string& what) {
  return TIDE_ERROR(Code::kInvalidArgument, what);
}

// Rates in TOML are GB/s (1e9 B/s) numbers: nic_gbps = 50.
Status getRate(detail::TomlFields& f, const char* key, double& out, bool required) {
  double gbps = out / kGB;
  TIDE_RETURN_IF_ERROR(f.getDouble(key, gbps, required));
  if (gbps < 0) return f.error(key, "must not be negative");
  out = gbps * kGB;
  return Status::ok();
}

}  // namespace

int ClusterSpec::nicOfGpu(int localGpu) const {
  if (localGpu >= 0 && static_cast<size_t>(localGpu) < gpuNic.size()) return gpuNic[localGpu];
  return gpusPerNode > 0 ? localGpu * nicsPerNode / gpusPerNode : 0;
}

std::string ClusterSpec::toString() const {
  std::ostringstream o;
  o << name << ": " << nodes << " nodes x " << gpusPerNode << " GPUs, " << nicsPerNode << " NICs x "
    << nicBps / kGB << " GB/s, NVLink " << nvlinkBps / kGB << " GB/s, PCIe H2D " << pcieH2DBps / kGB
    << " / D2H " << pcieD2HBps / kGB << " GB/s";
  if (hostMemBps > 0) o << ", host memory " << hostMemBps / kGB << " GB/s per node";
  if (hbmBps > 0) o << ", HBM " << hbmBps / kGB << " GB/s";
  if (fabric.nodesPerLeaf > 0) {
    o << ", leaf/spine " << fabric.nodesPerLeaf << " nodes/leaf, " << fabric.oversubscription
      << ":1";
  }
  return o.str();
}

Status validateCluster(const ClusterSpec& c) {
  const std::string w = "cluster '" + c.name + "': ";
  if (c.nodes < 1 || c.nodes > (1 << 20)) return bad(w + "nodes must be in 1..1048576");
  if (c.gpusPerNode < 1 || c.gpusPerNode > 1024) return bad(w + "gpus_per_node must be in 1..1024");
  if (c.nicsPerNode < 1 || c.nicsPerNode > 1024) return bad(w + "nics_per_node must be in 1..1024");
  if (!(c.nicBps > 0)) return bad(w + "nic bandwidth must be > 0");
  if (!(c.nicPayloadFraction > 0 && c.nicPayloadFraction <= 1)) {
    return bad(w + "nic payload fraction must be in (0, 1]");
  }
  if (c.fabric.nodesPerLeaf < 0) return bad(w + "nodes_per_leaf must be >= 0");
  if (!(c.fabric.oversubscription >= 1)) return bad(w + "oversubscription must be >= 1");
  for (int n : c.gpuNic) {
    if (n < 0 || n >= c.nicsPerNode) return bad(w + "gpu_nic entry out of range");
  }
  if (!c.gpuNic.empty() && static_cast<int>(c.gpuNic.size()) != c.gpusPerNode) {
    return bad(w + "gpu_nic needs one entry per GPU");
  }
  return Status::ok();
}

std::vector<std::string> clusterPresets() {
  std::vector<std::string> names;
  for (size_t i = 0; i < detail::kEmbeddedClusterCount; ++i) {
    names.emplace_back(detail::kEmbeddedClusters[i].name);
  }
  return names;
}

Result<ClusterSpec> parseClusterToml(std::string_view text, std::string_view origin) {
  TIDE_ASSIGN_OR_RETURN(toml::table t, detail::parseToml(text, origin));
  detail::TomlFields f(t, std::string(origin));
  ClusterSpec c;
  TIDE_RETURN_IF_ERROR(f.getString("name", c.name, true));
  TIDE_RETURN_IF_ERROR(f.getInt("nodes", c.nodes, 1 << 20, true));
  TIDE_RETURN_IF_ERROR(f.getInt("gpus_per_node", c.gpusPerNode, 1024, true));
  TIDE_RETURN_IF_ERROR(f.getInt("nics_per_node", c.nicsPerNode, 1024, true));
  TIDE_RETURN_IF_ERROR(getRate(f, "nic_gbps", c.nicBps, true));
  TIDE_RETURN_IF_ERROR(getRate(f, "nvlink_gbps", c.nvlinkBps, false));
  TIDE_RETURN_IF_ERROR(getRate(f, "pcie_h2d_gbps", c.pcieH2DBps, false));
  TIDE_RETURN_IF_ERROR(getRate(f, "pcie_d2h_gbps", c.pcieD2HBps, false));
  TIDE_RETURN_IF_ERROR(getRate(f, "host_mem_gbps", c.hostMemBps, false));
  TIDE_RETURN_IF_ERROR(getRate(f, "hbm_gbps", c.hbmBps, false));
  TIDE_RETURN_IF_ERROR(getRate(f, "storage_gbps", c.storageBps, false));
  TIDE_RETURN_IF_ERROR(f.getInt("nodes_per_leaf", c.fabric.nodesPerLeaf, 1 << 20, false));
  TIDE_RETURN_IF_ERROR(f.getDouble("oversubscription", c.fabric.oversubscription, false));
  double latUs = c.fabric.latencySeconds * 1e6;
  TIDE_RETURN_IF_ERROR(f.getDouble("latency_us", latUs, false));
  if (latUs < 0) return f.error("latency_us", "must not be negative");
  c.fabric.latencySeconds = latUs * 1e-6;
  TIDE_RETURN_IF_ERROR(f.rejectUnknown());
  TIDE_RETURN_IF_ERROR(validateCluster(c).withContext(std::string(origin)));
  return c;
}

Result<ClusterSpec> loadCluster(std::string_view nameOrPath) {
  // Before the ":nodes=" override: "emulated:nodes=N,..." is a spec of its own.
  if (nameOrPath.rfind("emulated:", 0) == 0) return parseEmulated(nameOrPath);
  std::string_view name = nameOrPath;
  int nodes = 0;
  if (size_t colon = nameOrPath.find(":nodes="); colon != std::string_view::npos) {
    name = nameOrPath.substr(0, colon);
    auto n = parseCount(nameOrPath.substr(colon + 7));
    if (!n.isOk() || *n == 0 || *n > (1u << 20)) {
      return bad("cluster '" + std::string(nameOrPath) +
                 "': a preset takes only ':nodes=N' with N in 1..1048576");
    }
    nodes = static_cast<int>(*n);
  }
  Result<ClusterSpec> c = TIDE_ERROR(Code::kNotFound, "");
  bool found = false;
  for (size_t i = 0; i < detail::kEmbeddedClusterCount; ++i) {
    if (name == detail::kEmbeddedClusters[i].name) {
      c = parseClusterToml(detail::kEmbeddedClusters[i].text,
                           std::string(detail::kEmbeddedClusters[i].name) + ".toml");
      found = true;
    }
  }
  if (!found) {
    std::ifstream in{std::string(name)};
    if (!in) {
      std::string names;
      for (const auto& n : clusterPresets()) names += (names.empty() ? "" : ", ") + n;
      return TIDE_ERROR(Code::kNotFound, "cluster '" + std::string(name) +
                                             "' is neither a preset nor a readable file "
                                             "(presets: " +
                                             names + ")");
    }
    std::stringstream ss;
    ss << in.rdbuf();
    c = parseClusterToml(ss.str(), name);
  }
  if (!c.isOk()) return c;
  if (nodes > 0) c->nodes = nodes;
  return c;
}

Result<ClusterSpec> parseEmulated(std::string_view text) {
  constexpr std::string_view kPrefix = "emulated:";
  if (text.rfind(kPrefix, 0) != 0) return bad("'" + std::string(text) + "': want emulated:...");
  ClusterSpec c;
  c.name = std::string(text);
  c.kind = ClusterKind::kEmulated;
  c.nicsPerNode = 0;
  std::string_view rest = text.substr(kPrefix.size());
  bool haveNic = false;
  std::vector<std::string_view> seen;
  size_t pos = 0;
  while (pos < rest.size()) {
    size_t comma = rest.find(',', pos);
    if (comma == std::string_view::npos) comma = rest.size();
    std::string_view item = rest.substr(pos, comma - pos);
    pos = comma + 1;
    size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      return bad("emulated: '" + std::string(item) + "' is not key=value");
    std::string_view k = item.substr(0, eq), v = item.substr(eq + 1);
    if (std::find(seen.begin(), seen.end(), k) != seen.end()) {
      return bad("emulated: '" + std::string(k) + "' given twice");
    }
    seen.push_back(k);
    if (k == "nic") {
      TIDE_ASSIGN_OR_RETURN(c.nicBps, parseRate(v));
      haveNic = true;
      continue;
    }
    if (k == "oversub") {
      char* end = nullptr;
      const std::string num(v);
      c.fabric.oversubscription = std::strtod(num.c_str(), &end);
      if (num.empty() || end != num.c_str() + num.size() ||
          !(c.fabric.oversubscription >= 1 && c.fabric.oversubscription <= 1000)) {
        return bad("emulated: 'oversub=" + num + "' needs a number in 1..1000 (the leaf's " +
                   "nodes' links : its uplink)");
      }
      continue;
    }
    auto n = parseCount(v);
    if (!n.isOk() || *n == 0 || *n > 4096) {
      return bad("emulated: '" + std::string(item) + "' needs an integer in 1..4096");
    }
    if (k == "nodes") {
      c.nodes = static_cast<int>(*n);
    } else if (k == "gpus") {
      c.gpusPerNode = static_cast<int>(*n);
    } else if (k == "nics") {
      c.nicsPerNode = static_cast<int>(*n);
    } else if (k == "leaf") {
      c.fabric.nodesPerLeaf = static_cast<int>(*n);
    } else {
      return bad("emulated: unknown key '" + std::string(k) +
                 "' (nodes, gpus, nic, nics, leaf, oversub)");
    }
  }
  if (!haveNic) return bad("emulated: nic=RATE is required (e.g. nic=10Gbps)");
  if (c.nicsPerNode == 0) c.nicsPerNode = c.gpusPerNode;
  if (c.fabric.oversubscription > 1 && c.fabric.nodesPerLeaf == 0)
    return bad("emulated: oversub needs leaf=N (nodes per leaf switch)");
  // Same-host ranks: the other paths are memory copies, not modelled as limits.
  c.nvlinkBps = c.pcieH2DBps = c.pcieD2HBps = c.hostMemBps = c.hbmBps = c.storageBps = 0;
  // datasheet: Ethernet II header 14 B, IPv4 20 B, TCP 20 B + 12 B of
  // timestamps (Linux's default) in a frame of MTU 1500 + 14 B that HTB
  // meters (iperf3 through such a link: 94.2 of 100 Mbit/s, docs/sync.md).
  c.nicPayloadFraction = 1448.0 / 1514.0;
  TIDE_RETURN_IF_ERROR(validateCluster(c));
  return c;
}

}  // namespace tide::workloads
