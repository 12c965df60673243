#include "engine/transport/rdma/qp_connector.h"

#include <cstring>
#include <random>

#include "engine/core/errno_status.h"
#include "engine/core/log.h"

namespace tide::transport::rdma {
namespace {

Status modify(ibv_qp* qp, ibv_qp_attr& attr, int mask, const char* to) {
  int rc = ibv_modify_qp(qp, &attr, mask);
  if (rc != 0) {
    errno = rc;
    return TIDE_ERRNO(std::string("ibv_modify_qp(QP ") + std::to_string(qp->qp_num) + " -> " + to +
                      ")");
  }
  return Status::ok();
}

template <typename T>
void put(std::string& out, const T& v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

std::string serializeEndpoints(uint32_t rails, const std::vector<QpEndpoint>& eps) {
  std::string out;
  put(out, rails);
  put(out, static_cast<uint32_t>(eps.size()));
  for (const auto& e : eps) put(out, e);
  return out;
}

Result<std::vector<QpEndpoint>> parseEndpoints(const std::string& in, uint32_t wantRails,
                                               uint32_t wantCount, int peer) {
  uint32_t rails = 0, count = 0;
  if (in.size() < 8)
    return TIDE_ERROR(Code::kInvalidArgument,
                      "malformed QP record from rank " + std::to_string(peer));
  std::memcpy(&rails, in.data(), 4);
  std::memcpy(&count, in.data() + 4, 4);
  if (rails != wantRails)
    return TIDE_ERROR(Code::kInvalidArgument,
                      "rank " + std::to_string(peer) + " uses " + std::to_string(rails) +
                          " RDMA devices, this rank " + std::to_string(wantRails) +
                          " (every rank must list the same number)");
  if (count != wantCount || in.size() != 8 + count * sizeof(QpEndpoint))
    return TIDE_ERROR(Code::kInvalidArgument, "rank " + std::to_string(peer) + " offers " +
                                                  std::to_string(count) + " QPs, expected " +
                                                  std::to_string(wantCount) +
                                                  " (same streams on every rank?)");
  std::vector<QpEndpoint> eps(count);
  std::memcpy(eps.data(), in.data() + 8, count * sizeof(QpEndpoint));
  return eps;
}

QpEndpoint localEndpoint(const Device& dev, ibv_qp* qp, uint32_t psn) {
  QpEndpoint e;
  e.qpn = qp->qp_num;
  e.psn = psn;
  e.gid = dev.gid();
  e.lid = dev.lid();
  e.mtu = static_cast<uint8_t>(dev.activeMtu());
  return e;
}

Result<Channel> newChannel(const ConnectPlan& plan, int peer, int rail, bool sender) {
  Channel ch;
  TIDE_ASSIGN_OR_RETURN(ch.qp, plan.makeQp(rail));
  ch.peer = peer;
  ch.rail = rail;
  ch.sender = sender;
  ch.sqDepth = plan.params.sqDepth;
  ch.signalEvery = std::max<uint32_t>(1, plan.params.sqDepth / 4);
  TIDE_RETURN_IF_ERROR(moveToInit(ch.qp.get(), *plan.devices[static_cast<size_t>(rail)]));
  return ch;
}

}  // namespace

uint32_t randomPsn() {
  static thread_local std::mt19937 gen(std::random_device{}());
  return gen() & 0xffffff;
}

Status moveToInit(ibv_qp* qp, const Device& dev) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.pkey_index = 0;
  attr.port_num = dev.port();
  attr.qp_access_flags = kRemoteAccess;
  return modify(qp, attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
                "INIT");
}

Status moveToRtr(ibv_qp* qp, const Device& dev, const QpEndpoint& remote, const QpParams& params) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = static_cast<ibv_mtu>(std::min<int>(remote.mtu, dev.activeMtu()));
  attr.dest_qp_num = remote.qpn;
  attr.rq_psn = remote.psn;
  attr.max_dest_rd_atomic = static_cast<uint8_t>(std::min<int>(
      params.rdAtomic, dev.attr().max_qp_rd_atom > 0 ? dev.attr().max_qp_rd_atom : 1));
  attr.min_rnr_timer = 12;  // 0.64 ms
  attr.ah_attr.port_num = dev.port();
  attr.ah_attr.dlid = remote.lid;
  attr.ah_attr.sl = 0;
  if (dev.isEthernet() || remote.lid == 0) {
    attr.ah_attr.is_global = 1;
    attr.ah_attr.grh.dgid = remote.gid;
    attr.ah_attr.grh.sgid_index = static_cast<uint8_t>(dev.gidIndex());
    attr.ah_attr.grh.hop_limit = 64;
  }
  return modify(qp, attr,
                IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
                "RTR");
}

Status moveToRts(ibv_qp* qp, uint32_t psn, const QpParams& params) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RTS;
  attr.timeout = params.timeout;
  attr.retry_cnt = params.retryCnt;
  attr.rnr_retry = params.rnrRetry;
  attr.sq_psn = psn;
  attr.max_rd_atomic = params.rdAtomic;
  return modify(qp, attr,
                IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                    IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
                "RTS");
}

Status connectSelf(const ConnectPlan& plan, std::vector<Channel>& channels) {
  int rails = static_cast<int>(plan.devices.size());
  for (int r = 0; r < rails; ++r) {
    const Device& dev = *plan.devices[static_cast<size_t>(r)];
    for (int s = 0; s < plan.streams; ++s) {
      Channel& a = channels[channelIndex(plan, plan.rank, r, s)];
      TIDE_ASSIGN_OR_RETURN(Channel b, newChannel(plan, plan.rank, r, /*sender=*/false));
      uint32_t psnA = randomPsn(), psnB = randomPsn();
      QpEndpoint ea = localEndpoint(dev, a.qp.get(), psnA);
      QpEndpoint eb = localEndpoint(dev, b.qp.get(), psnB);
      TIDE_RETURN_IF_ERROR(moveToRtr(a.qp.get(), dev, eb, plan.params));
      TIDE_RETURN_IF_ERROR(moveToRts(a.qp.get(), psnA, plan.params));
      TIDE_RETURN_IF_ERROR(moveToRtr(b.qp.get(), dev, ea, plan.params));
      TIDE_RETURN_IF_ERROR(moveToRts(b.qp.get(), psnB, plan.params));
      channels.push_back(std::move(b));
    }
  }
  return Status::ok();
}

Result<std::vector<Channel>> createChannels(const ConnectPlan& plan) {
  int rails = static_cast<int>(plan.devices.size());
  std::vector<Channel> channels;
  channels.reserve(static_cast<size_t>((plan.worldSize + 1) * rails * plan.streams));
  for (int p = 0; p < plan.worldSize; ++p)
    for (int r = 0; r < rails; ++r)
      for (int s = 0; s < plan.streams; ++s) {
        TIDE_ASSIGN_OR_RETURN(Channel ch, newChannel(plan, p, r, /*sender=*/true));
        channels.push_back(std::move(ch));
      }
  return channels;
}

Result<std::vector<Channel>> connectViaStore(const ConnectPlan& plan, Store& store) {
  int rails = static_cast<int>(plan.devices.size());
  TIDE_ASSIGN_OR_RETURN(std::vector<Channel> channels, createChannels(plan));
  std::vector<uint32_t> psns(channels.size());
  for (auto& psn : psns) psn = randomPsn();
  for (int p = 0; p < plan.worldSize; ++p) {
    if (p == plan.rank) continue;
    std::vector<QpEndpoint> eps;
    for (int r = 0; r < rails; ++r)
      for (int s = 0; s < plan.streams; ++s) {
        size_t i = channelIndex(plan, p, r, s);
        eps.push_back(
            localEndpoint(*plan.devices[static_cast<size_t>(r)], channels[i].qp.get(), psns[i]));
      }
    std::string key = plan.keyPrefix + "qp/" + std::to_string(plan.rank) + "/" + std::to_string(p);
    TIDE_RETURN_IF_ERROR(store.set(key, serializeEndpoints(static_cast<uint32_t>(rails), eps)));
  }
  TIDE_RETURN_IF_ERROR(connectSelf(plan, channels));

  uint32_t perPeer = static_cast<uint32_t>(rails * plan.streams);
  for (int p = 0; p < plan.worldSize; ++p) {
    if (p == plan.rank) continue;
    std::string key = plan.keyPrefix + "qp/" + std::to_string(p) + "/" + std::to_string(plan.rank);
    auto raw = store.get(key, plan.timeoutSeconds);
    if (!raw.isOk())
      return raw.status().withContext("waiting for rank " + std::to_string(p) + "'s RDMA QPs");
    TIDE_ASSIGN_OR_RETURN(auto eps, parseEndpoints(*raw, static_cast<uint32_t>(rails), perPeer, p));
    for (int r = 0; r < rails; ++r) {
      const Device& dev = *plan.devices[static_cast<size_t>(r)];
      for (int s = 0; s < plan.streams; ++s) {
        size_t i = channelIndex(plan, p, r, s);
        const QpEndpoint& remote = eps[static_cast<size_t>(r * plan.streams + s)];
        TIDE_RETURN_IF_ERROR(moveToRtr(channels[i].qp.get(), dev, remote, plan.params));
        TIDE_RETURN_IF_ERROR(moveToRts(channels[i].qp.get(), psns[i], plan.params));
      }
    }
  }
  TIDE_RETURN_IF_ERROR(
      storeBarrier(store, plan.keyPrefix + "connected", plan.worldSize, plan.timeoutSeconds)
          .withContext("RDMA connect barrier"));
  TIDE_LOG_INFO("rdma: rank {} connected {} QPs over the store", plan.rank, channels.size());
  return channels;
}

}  // namespace tide::transport::rdma
