#include "engine/transport/rdma/cm_connector.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>

#include <cstring>
#include <string_view>

#include "engine/core/clock.h"
#include "engine/core/errno_status.h"
#include "engine/core/log.h"
#include "engine/core/parse.h"

namespace tide::transport::rdma {
namespace {

struct Hello {  // private data of a connect request
  int32_t rank;
  int32_t rail;
  int32_t stream;
};

// Tags passive ids in id->context (active ids carry channel index + 1).
constexpr uintptr_t kPassiveTag = uintptr_t{1} << 62;

Result<sockaddr_in> parseAddr(const std::string& ip, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  if (inet_pton(AF_INET, ip.c_str(), &a.sin_addr) != 1)
    return TIDE_ERROR(Code::kInvalidArgument, "bad IPv4 address '" + ip + "'");
  return a;
}

Status cmTransition(rdma_cm_id* id, ibv_qp* qp, ibv_qp_state state, const QpParams& params) {
  ibv_qp_attr attr{};
  int mask = 0;
  attr.qp_state = state;
  if (rdma_init_qp_attr(id, &attr, &mask) != 0) return TIDE_ERRNO("rdma_init_qp_attr");
  if (state == IBV_QPS_RTS) {
    attr.timeout = params.timeout;
    attr.retry_cnt = params.retryCnt;
    attr.rnr_retry = params.rnrRetry;
    mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY;
  }
  int rc = ibv_modify_qp(qp, &attr, mask);
  if (rc != 0) {
    errno = rc;
    return TIDE_ERRNO(std::string("ibv_modify_qp via CM (") +
                      (state == IBV_QPS_RTR ? "RTR" : "RTS") + ")");
  }
  return Status::ok();
}

rdma_conn_param connParam(const ConnectPlan& plan, ibv_qp* qp, const Hello* hello) {
  rdma_conn_param p{};
  p.private_data = hello;
  p.private_data_len = hello ? sizeof(Hello) : 0;
  p.responder_resources = plan.params.rdAtomic;
  p.initiator_depth = plan.params.rdAtomic;
  p.retry_count = plan.params.retryCnt;
  p.rnr_retry_count = plan.params.rnrRetry;
  p.qp_num = qp->qp_num;
  return p;
}

}  // namespace

CmConnection::~CmConnection() {
  for (auto it = ids_.rbegin(); it != ids_.rend(); ++it) rdma_destroy_id(*it);
  if (events_ != nullptr) rdma_destroy_event_channel(events_);
}

Result<std::unique_ptr<CmConnection>> CmConnection::connect(const ConnectPlan& plan, Store& store,
                                                            std::vector<Channel>& channels) {
  std::unique_ptr<CmConnection> c(new CmConnection());
  c->events_ = rdma_create_event_channel();
  if (c->events_ == nullptr) return TIDE_ERRNO("rdma_create_event_channel");
  int flags = fcntl(c->events_->fd, F_GETFL);
  if (flags < 0 || fcntl(c->events_->fd, F_SETFL, flags | O_NONBLOCK) < 0)
    return TIDE_ERRNO("fcntl(rdma cm channel)");
  TIDE_RETURN_IF_ERROR(c->run(plan, store, channels).withContext("RDMA CM connect"));
  return c;
}

Status CmConnection::run(const ConnectPlan& plan, Store& store, std::vector<Channel>& channels) {
  int rails = static_cast<int>(plan.devices.size());
  // 1. One listener per rail on the device's own IPv4 address.
  for (int r = 0; r < rails; ++r) {
    const Device& dev = *plan.devices[static_cast<size_t>(r)];
    std::string ip = dev.ipv4();
    if (ip.empty())
      return TIDE_ERROR(Code::kFailedPrecondition,
                        dev.name() + " GID " + std::to_string(dev.gidIndex()) +
                            " is not an IPv4 RoCE address; connect=cm needs one");
    rdma_cm_id* id = nullptr;
    if (rdma_create_id(events_, &id, nullptr, RDMA_PS_TCP) != 0)
      return TIDE_ERRNO("rdma_create_id");
    ids_.push_back(id);
    TIDE_ASSIGN_OR_RETURN(sockaddr_in addr, parseAddr(ip, 0));
    if (rdma_bind_addr(id, reinterpret_cast<sockaddr*>(&addr)) != 0)
      return TIDE_ERRNO("rdma_bind_addr(" + ip + ")");
    if (rdma_listen(id, 128) != 0) return TIDE_ERRNO("rdma_listen(" + ip + ")");
    std::string key = plan.keyPrefix + "cm/" + std::to_string(plan.rank) + "/" + std::to_string(r);
    TIDE_RETURN_IF_ERROR(store.set(key, ip + " " + std::to_string(ntohs(rdma_get_src_port(id)))));
  }

  // 2. Active side: this rank connects to every lower rank.
  Deadline deadline = Deadline::after(plan.timeoutSeconds);
  int expected = (plan.worldSize - 1) * rails * plan.streams;
  for (int p = 0; p < plan.rank; ++p) {
    for (int r = 0; r < rails; ++r) {
      std::string key = plan.keyPrefix + "cm/" + std::to_string(p) + "/" + std::to_string(r);
      auto where = store.get(key, plan.timeoutSeconds);
      if (!where.isOk())
        return where.status().withContext("waiting for rank " + std::to_string(p) + "'s listener");
      // "ip port", as the listener published it above.
      const size_t space = where->find(' ');
      auto port =
          space == std::string::npos
              ? Result<uint64_t>(TIDE_ERROR(Code::kInvalidArgument, "no port"))
              : parseUnsigned(std::string_view(*where).substr(space + 1), "CM port", 10, 65535);
      if (!port.isOk())
        return TIDE_ERROR(Code::kInvalidArgument, "malformed CM address '" + *where + "'");
      const std::string ip = where->substr(0, space);
      TIDE_ASSIGN_OR_RETURN(sockaddr_in dst, parseAddr(ip, static_cast<uint16_t>(*port)));
      TIDE_ASSIGN_OR_RETURN(sockaddr_in src,
                            parseAddr(plan.devices[static_cast<size_t>(r)]->ipv4(), 0));
      for (int s = 0; s < plan.streams; ++s) {
        size_t idx = channelIndex(plan, p, r, s);
        rdma_cm_id* id = nullptr;
        if (rdma_create_id(events_, &id, reinterpret_cast<void*>(idx + 1), RDMA_PS_TCP) != 0)
          return TIDE_ERRNO("rdma_create_id");
        ids_.push_back(id);
        if (rdma_resolve_addr(id, reinterpret_cast<sockaddr*>(&src),
                              reinterpret_cast<sockaddr*>(&dst), 5000) != 0)
          return TIDE_ERRNO("rdma_resolve_addr(" + ip + ")");
      }
    }
  }

  // 3. Event loop until every connection, active or passive, is up.
  int established = 0;
  while (established < expected) {
    if (deadline.expired())
      return TIDE_ERROR(Code::kTimeout, std::to_string(established) + " of " +
                                            std::to_string(expected) + " connections after " +
                                            std::to_string(plan.timeoutSeconds) + " s");
    pollfd pfd{events_->fd, POLLIN, 0};
    (void)::poll(&pfd, 1, 100);
    rdma_cm_event* ev = nullptr;
    if (rdma_get_cm_event(events_, &ev) != 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
      return TIDE_ERRNO("rdma_get_cm_event");
    }
    rdma_cm_event_type type = ev->event;
    rdma_cm_id* id = ev->id;
    int evStatus = ev->status;
    Hello hello{-1, -1, -1};
    if (type == RDMA_CM_EVENT_CONNECT_REQUEST && ev->param.conn.private_data_len >= sizeof hello)
      std::memcpy(&hello, ev->param.conn.private_data, sizeof hello);
    rdma_ack_cm_event(ev);

    auto idx = reinterpret_cast<uintptr_t>(id->context);
    switch (type) {
      case RDMA_CM_EVENT_ADDR_RESOLVED:
        if (rdma_resolve_route(id, 5000) != 0) return TIDE_ERRNO("rdma_resolve_route");
        break;
      case RDMA_CM_EVENT_ROUTE_RESOLVED: {
        Channel& ch = channels[idx - 1];
        std::string got = ibv_get_device_name(id->verbs->device);
        const std::string& want = plan.devices[static_cast<size_t>(ch.rail)]->name();
        if (got != want)
          return TIDE_ERROR(Code::kFailedPrecondition, "CM routed rail " + std::to_string(ch.rail) +
                                                           " through " + got + ", not " + want);
        Hello mine{plan.rank, ch.rail,
                   static_cast<int32_t>((idx - 1) % static_cast<size_t>(plan.streams))};
        rdma_conn_param param = connParam(plan, ch.qp.get(), &mine);
        if (rdma_connect(id, &param) != 0) return TIDE_ERRNO("rdma_connect");
        break;
      }
      case RDMA_CM_EVENT_CONNECT_RESPONSE: {
        Channel& ch = channels[idx - 1];
        TIDE_RETURN_IF_ERROR(cmTransition(id, ch.qp.get(), IBV_QPS_RTR, plan.params));
        TIDE_RETURN_IF_ERROR(cmTransition(id, ch.qp.get(), IBV_QPS_RTS, plan.params));
        if (rdma_establish(id) != 0) return TIDE_ERRNO("rdma_establish");
        ++established;
        break;
      }
      case RDMA_CM_EVENT_CONNECT_REQUEST: {
        ids_.push_back(id);
        if (hello.rank <= plan.rank || hello.rank >= plan.worldSize || hello.rail < 0 ||
            hello.rail >= rails || hello.stream < 0 || hello.stream >= plan.streams) {
          rdma_reject(id, nullptr, 0);
          return TIDE_ERROR(Code::kInvalidArgument, "unexpected CM connect request (rank " +
                                                        std::to_string(hello.rank) + ", rail " +
                                                        std::to_string(hello.rail) + ")");
        }
        size_t ci = channelIndex(plan, hello.rank, hello.rail, hello.stream);
        id->context = reinterpret_cast<void*>(kPassiveTag | (ci + 1));
        Channel& ch = channels[ci];
        TIDE_RETURN_IF_ERROR(cmTransition(id, ch.qp.get(), IBV_QPS_RTR, plan.params));
        TIDE_RETURN_IF_ERROR(cmTransition(id, ch.qp.get(), IBV_QPS_RTS, plan.params));
        rdma_conn_param param = connParam(plan, ch.qp.get(), nullptr);
        if (rdma_accept(id, &param) != 0) return TIDE_ERRNO("rdma_accept");
        break;
      }
      case RDMA_CM_EVENT_ESTABLISHED:
        if ((idx & kPassiveTag) != 0) ++established;
        break;
      default:
        return TIDE_ERROR(Code::kUnavailable, std::string("CM event ") + rdma_event_str(type) +
                                                  " (status " + std::to_string(evStatus) + ")");
    }
  }
  TIDE_RETURN_IF_ERROR(
      storeBarrier(store, plan.keyPrefix + "cm-connected", plan.worldSize, plan.timeoutSeconds));
  TIDE_LOG_INFO("rdma: rank {} connected {} QPs through RDMA CM", plan.rank, expected);
  return Status::ok();
}

}  // namespace tide::transport::rdma
