#include "engine/plan/lower_bound.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

namespace tide::plan {

namespace {

// Dense per-link byte counters, named lazily (only the busiest get names).
struct Counter {
  std::vector<uint64_t> bytes;
  double bps = 0;
};

nlohmann::json linkJson(const LinkLoad& l) {
  return {{"link", l.name},
          {"bytes", l.bytes},
          {"gbps", l.bytesPerSecond / 1e9},
          {"seconds", l.seconds()}};
}

}  // namespace

nlohmann::json LowerBound::toJson() const {
  nlohmann::json j;
  j["seconds"] = seconds;
  j["bottleneck"] = linkJson(bottleneck);
  j["nic_tx"] = linkJson(nicTx);
  j["nic_rx"] = linkJson(nicRx);
  j["nvlink"] = linkJson(nvlink);
  j["pcie"] = linkJson(pcie);
  j["fabric"] = linkJson(fabric);
  j["busiest"] = nlohmann::json::array();
  for (const auto& l : busiest) j["busiest"].push_back(linkJson(l));
  return j;
}

Result<LowerBound> lowerBound(const TransferPlan& plan, const workloads::ClusterSpec& c) {
  if (c.nodes <= 0 || c.gpusPerNode <= 0 || c.nicsPerNode <= 0) {
    return TIDE_ERROR(Code::kInvalidArgument, "lower bound: cluster " + c.name +
                                                  " needs nodes, GPUs and NICs per node > 0");
  }
  for (const auto& r : plan.ranks) {
    if (static_cast<int>(r.node) >= c.nodes || static_cast<int>(r.gpu) >= c.gpusPerNode) {
      return TIDE_ERROR(Code::kInvalidArgument,
                        "lower bound: rank " + std::to_string(r.id) + " sits on node " +
                            std::to_string(r.node) + " gpu " + std::to_string(r.gpu) +
                            " but cluster " + c.name + " has " + std::to_string(c.nodes) +
                            " nodes of " + std::to_string(c.gpusPerNode) + " GPUs");
    }
  }
  const bool hostStaging = plan.params.options.staging == Staging::kHost;
  const size_t nics = static_cast<size_t>(c.nodes) * c.nicsPerNode;
  const size_t gpus = static_cast<size_t>(c.nodes) * c.gpusPerNode;
  const int perLeaf = c.fabric.nodesPerLeaf;
  const bool oversub = perLeaf > 0 && c.fabric.oversubscription > 1.0;
  const size_t leaves = oversub ? (c.nodes + perLeaf - 1) / perLeaf : 0;
  Counter txNic{std::vector<uint64_t>(nics), c.nicPayloadBps()};
  Counter rxNic{std::vector<uint64_t>(nics), c.nicPayloadBps()};
  Counter txNv{std::vector<uint64_t>(gpus), c.nvlinkBps};
  Counter rxNv{std::vector<uint64_t>(gpus), c.nvlinkBps};
  Counter d2h{std::vector<uint64_t>(gpus), c.pcieD2HBps};
  const double uplinkBps =
      oversub ? perLeaf * c.nicsPerNode * c.nicPayloadBps() / c.fabric.oversubscription : 0.0;
  Counter up{std::vector<uint64_t>(leaves), uplinkBps};
  Counter down{std::vector<uint64_t>(leaves), uplinkBps};

  auto nicIndex = [&](const RankInfo& r) {
    return static_cast<size_t>(r.node) * c.nicsPerNode + c.nicOfGpu(static_cast<int>(r.gpu));
  };
  auto gpuIndex = [&](const RankInfo& r) {
    return static_cast<size_t>(r.node) * c.gpusPerNode + r.gpu;
  };
  for (const auto& m : plan.moves) {
    const RankInfo& s = plan.ranks[m.src];
    const RankInfo& d = plan.ranks[m.dst];
    switch (m.path) {
      case Path::kNetwork:
        txNic.bytes[nicIndex(s)] += m.bytes;
        rxNic.bytes[nicIndex(d)] += m.bytes;
        if (oversub && s.node / perLeaf != d.node / perLeaf) {
          up.bytes[s.node / perLeaf] += m.bytes;
          down.bytes[d.node / perLeaf] += m.bytes;
        }
        break;
      case Path::kIntraNode:
        txNv.bytes[gpuIndex(s)] += m.bytes;
        rxNv.bytes[gpuIndex(d)] += m.bytes;
        break;
      case Path::kLocal:
        if (hostStaging && m.srcSpace == Space::kTrain && m.dstSpace == Space::kStaging) {
          // Reads the GPU shard over PCIe; counts source-dtype bytes.
          d2h.bytes[gpuIndex(s)] += m.box.volume() * workloads::bytesOf(m.srcDtype);
        }
        break;
    }
  }

  LowerBound lb;
  std::vector<LinkLoad> all;
  auto scan = [&](const Counter& k, const char* cls, auto nameOf, LinkLoad* best) -> Status {
    for (size_t i = 0; i < k.bytes.size(); ++i) {
      if (k.bytes[i] == 0) continue;
      if (k.bps <= 0) {
        return TIDE_ERROR(Code::kInvalidArgument, std::string("lower bound: the plan uses ") + cls +
                                                      " but cluster " + c.name +
                                                      " gives it no bandwidth");
      }
      LinkLoad l{nameOf(i), k.bytes[i], k.bps};
      if (best->name.empty() || l.seconds() > best->seconds()) *best = l;
      all.push_back(std::move(l));
    }
    return Status::ok();
  };
  auto nicName = [&](const char* dir) {
    return [&c, dir](size_t i) {
      return "node " + std::to_string(i / c.nicsPerNode) + " nic " +
             std::to_string(i % c.nicsPerNode) + " " + dir;
    };
  };
  auto gpuName = [&](const char* what) {
    return [&c, what](size_t i) {
      return "node " + std::to_string(i / c.gpusPerNode) + " gpu " +
             std::to_string(i % c.gpusPerNode) + " " + what;
    };
  };
  auto leafName = [](const char* dir) {
    return [dir](size_t i) { return "leaf " + std::to_string(i) + " " + dir; };
  };
  LinkLoad nvRx, fabricDown;
  TIDE_RETURN_IF_ERROR(scan(txNic, "NICs", nicName("tx"), &lb.nicTx));
  TIDE_RETURN_IF_ERROR(scan(rxNic, "NICs", nicName("rx"), &lb.nicRx));
  TIDE_RETURN_IF_ERROR(scan(txNv, "NVLink", gpuName("nvlink tx"), &lb.nvlink));
  TIDE_RETURN_IF_ERROR(scan(rxNv, "NVLink", gpuName("nvlink rx"), &nvRx));
  TIDE_RETURN_IF_ERROR(scan(d2h, "PCIe D2H", gpuName("pcie d2h"), &lb.pcie));
  TIDE_RETURN_IF_ERROR(scan(up, "leaf uplinks", leafName("uplink"), &lb.fabric));
  TIDE_RETURN_IF_ERROR(scan(down, "leaf uplinks", leafName("downlink"), &fabricDown));
  if (nvRx.seconds() > lb.nvlink.seconds()) lb.nvlink = nvRx;
  if (fabricDown.seconds() > lb.fabric.seconds()) lb.fabric = fabricDown;

  std::stable_sort(all.begin(), all.end(),
                   [](const LinkLoad& a, const LinkLoad& b) { return a.seconds() > b.seconds(); });
  if (all.size() > 8) all.resize(8);
  lb.busiest = std::move(all);
  if (!lb.busiest.empty()) {
    lb.bottleneck = lb.busiest.front();
    lb.seconds = lb.bottleneck.seconds();
  }
  return lb;
}

}  // namespace tide::plan
