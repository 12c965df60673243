#include "engine/sync/p2p_assignment.h"

#include <algorithm>
#include <numeric>
#include <string>

namespace tide::sync {

namespace {

// Bytes queued per link; NICs first, then one NVLink port per GPU.
class LinkLoads {
 public:
  LinkLoads(const workloads::ClusterSpec& c, const plan::TransferPlan& p) : c_(c), p_(p) {
    nics_ = static_cast<size_t>(c.nodes) * c.nicsPerNode;
    const size_t gpus = static_cast<size_t>(c.nodes) * c.gpusPerNode;
    tx_.assign(nics_ + gpus, 0.0);
    rx_.assign(nics_ + gpus, 0.0);
  }

  // (tx link, rx link, bandwidth) of a transfer src -> dst.
  void links(uint32_t src, uint32_t dst, size_t* tx, size_t* rx, double* bps) const {
    const auto& s = p_.ranks[src];
    const auto& d = p_.ranks[dst];
    if (s.node == d.node) {
      *tx = nics_ + s.node * c_.gpusPerNode + s.gpu;
      *rx = nics_ + d.node * c_.gpusPerNode + d.gpu;
      *bps = c_.nvlinkBps > 0 ? c_.nvlinkBps : c_.nicBps;
    } else {
      *tx = s.node * c_.nicsPerNode + c_.nicOfGpu(static_cast<int>(s.gpu));
      *rx = d.node * c_.nicsPerNode + c_.nicOfGpu(static_cast<int>(d.gpu));
      *bps = c_.nicBps;
    }
  }
  // Seconds until the later of the two links drains if `bytes` are added.
  double cost(uint32_t src, uint32_t dst, double bytes) const {
    size_t tx, rx;
    double bps;
    links(src, dst, &tx, &rx, &bps);
    return std::max(tx_[tx] + bytes, rx_[rx] + bytes) / bps;
  }
  double txLoad(uint32_t src, uint32_t dst) const {
    size_t tx, rx;
    double bps;
    links(src, dst, &tx, &rx, &bps);
    return tx_[tx] / bps;
  }
  void add(uint32_t src, uint32_t dst, double bytes) {
    size_t tx, rx;
    double bps;
    links(src, dst, &tx, &rx, &bps);
    tx_[tx] += bytes;
    rx_[rx] += bytes;
  }

 private:
  const workloads::ClusterSpec& c_;
  const plan::TransferPlan& p_;
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
      uint32_t best = src[0];
      double bestCost = 0, bestTx = 0;
      for (size_t s = 0; s < src.size(); ++s) {
        const double cost = loads.cost(src[s], dst[k], pieceBytes[i]);
        const double tx = loads.txLoad(src[s], dst[k]);
        if (s == 0 || cost < bestCost || (cost == bestCost && tx < bestTx)) {
          best = src[s];
          bestCost = cost;
          bestTx = tx;
        }
      }
      a.source[a.pairBegin[i] + k] = best;
      loads.add(best, dst[k], pieceBytes[i]);
    }
  }
  return a;
}

}  // namespace tide::sync
