#include "engine/sync/p2p_assignment.h"

#include <algorithm>
#include <numeric>
#include <span>
#include <string>

namespace tide::sync {

namespace {

// Bytes queued per link; NICs first, then one NVLink port per GPU.
class LinkLoads {
 public:
  LinkLoads(const workloads::ClusterSpec& c, const plan::TransferPlan& p) : c_(c) {
    nics_ = static_cast<size_t>(c.nodes) * c.nicsPerNode;
    const size_t gpus = static_cast<size_t>(c.nodes) * c.gpusPerNode;
    tx_.assign(nics_ + gpus, 0.0);
    rx_.assign(nics_ + gpus, 0.0);
    // Each rank's NIC and NVLink port, once: looked up per candidate below.
    for (const auto& r : p.ranks) {
      at_.push_back(Place{r.node, r.node * c.nicsPerNode + c.nicOfGpu(static_cast<int>(r.gpu)),
                          nics_ + r.node * c.gpusPerNode + r.gpu});
    }
    nvBps_ = c.nvlinkBps > 0 ? c.nvlinkBps : c.nicBps;
  }

  // (tx link, rx link, bandwidth) of a transfer src -> dst.
  void links(uint32_t src, uint32_t dst, size_t* tx, size_t* rx, double* bps) const {
    const Place& s = at_[src];
    const Place& d = at_[dst];
    if (s.node == d.node) {
      *tx = s.nvlink;
      *rx = d.nvlink;
      *bps = nvBps_;
    } else {
      *tx = s.nic;
      *rx = d.nic;
      *bps = c_.nicBps;
    }
  }
  // The source that drains soonest if `bytes` go from it to `dst`: least
  // (seconds until the later of its two links drains, its tx queue in
  // seconds), the first on ties. One link look-up per candidate: at 16,384
  // GPUs this runs for 25 M (piece, target) pairs over 32 replicas each.
  uint32_t best(std::span<const uint32_t> srcs, uint32_t dst, double bytes) const {
    uint32_t bestSrc = srcs[0];
    double bestCost = 0, bestTx = 0;
    for (size_t s = 0; s < srcs.size(); ++s) {
      size_t tx, rx;
      double bps;
      links(srcs[s], dst, &tx, &rx, &bps);
      const double cost = std::max(tx_[tx] + bytes, rx_[rx] + bytes) / bps;
      const double txSeconds = tx_[tx] / bps;
      if (s == 0 || cost < bestCost || (cost == bestCost && txSeconds < bestTx)) {
        bestSrc = srcs[s];
        bestCost = cost;
        bestTx = txSeconds;
      }
    }
    return bestSrc;
  }
  void add(uint32_t src, uint32_t dst, double bytes) {
    size_t tx, rx;
    double bps;
    links(src, dst, &tx, &rx, &bps);
    tx_[tx] += bytes;
    rx_[rx] += bytes;
  }

 private:
  struct Place {
    uint32_t node;
    size_t nic, nvlink;  // link indices
  };
  const workloads::ClusterSpec& c_;
  std::vector<Place> at_;
  double nvBps_ = 0;
  size_t nics_ = 0;
  std::vector<double> tx_, rx_;
};

}  // namespace

Result<Assignment> assignSources(const plan::TransferPlan& base, const plan::Reshard& reshard,
                                 const workloads::ClusterSpec& cluster, bool roundRobin) {
  for (const auto& r : base.ranks) {
    if (static_cast<int>(r.node) >= cluster.nodes ||
        static_cast<int>(r.gpu) >= cluster.gpusPerNode) {
      return TIDE_ERROR(Code::kInvalidArgument,
                        "p2p: the placement needs " + std::to_string(r.node + 1) + " nodes of " +
                            std::to_string(r.gpu + 1) + "+ GPUs; cluster " + cluster.name +
                            " has " + std::to_string(cluster.nodes) + " x " +
                            std::to_string(cluster.gpusPerNode));
    }
  }
  if (cluster.nicBps <= 0) {
    return TIDE_ERROR(Code::kInvalidArgument, "p2p: cluster " + cluster.name + " has no NIC rate");
  }
  Assignment a;
  a.pairBegin.reserve(reshard.pieces.size() + 1);
  uint64_t pairs = 0;
  for (const auto& p : reshard.pieces) {
    a.pairBegin.push_back(static_cast<uint32_t>(pairs));
    pairs += p.dstEnd - p.dstBegin;
  }
  if (pairs > 0xffffffffull) {
    return TIDE_ERROR(Code::kResourceExhausted, "p2p: more than 2^32 (piece, target) pairs");
  }
  a.pairBegin.push_back(static_cast<uint32_t>(pairs));
  a.source.assign(pairs, 0);

  if (roundRobin) {
    uint64_t next = 0;
    for (size_t i = 0; i < reshard.pieces.size(); ++i) {
      const auto src = reshard.sourcesOf(reshard.pieces[i]);
      for (uint32_t k = a.pairBegin[i]; k < a.pairBegin[i + 1]; ++k) {
        a.source[k] = src[next++ % src.size()];
      }
    }
    return a;
  }

  LinkLoads loads(cluster, base);
  std::vector<double> pieceBytes(reshard.pieces.size());
  std::vector<uint32_t> flexible;  // pieces with a choice, as piece indices
  for (size_t i = 0; i < reshard.pieces.size(); ++i) {
    const auto& p = reshard.pieces[i];
    pieceBytes[i] =
        static_cast<double>(base.regionBytes(p.tensor, p.box, base.tensors[p.tensor].inferDtype));
    const auto src = reshard.sourcesOf(p);
    const auto dst = reshard.targetsOf(p);
    if (src.size() == 1) {
      for (uint32_t k = 0; k < dst.size(); ++k) {
        a.source[a.pairBegin[i] + k] = src[0];
        loads.add(src[0], dst[k], pieceBytes[i]);
      }
    } else {
      flexible.push_back(static_cast<uint32_t>(i));
    }
  }
  // Largest first (LPT), so small pieces fill the gaps the large ones leave.
  std::stable_sort(flexible.begin(), flexible.end(),
                   [&](uint32_t x, uint32_t y) { return pieceBytes[x] > pieceBytes[y]; });
  for (uint32_t i : flexible) {
    const auto& p = reshard.pieces[i];
    const auto src = reshard.sourcesOf(p);
    const auto dst = reshard.targetsOf(p);
    for (uint32_t k = 0; k < dst.size(); ++k) {
      const uint32_t best = loads.best(src, dst[k], pieceBytes[i]);
      a.source[a.pairBegin[i] + k] = best;
      loads.add(best, dst[k], pieceBytes[i]);
    }
  }
  return a;
}

}  // namespace tide::sync
