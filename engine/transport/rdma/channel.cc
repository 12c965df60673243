#include "engine/transport/rdma/channel.h"

#include <arpa/inet.h>

#include "engine/core/errno_status.h"
#include "engine/core/log.h"

namespace tide::transport::rdma {

Status postChain(Channel& ch, std::vector<PostItem>& items, uint32_t maxInline) {
  if (items.empty()) return Status::ok();
  std::vector<ibv_send_wr> wrs(items.size());
  std::vector<ibv_sge> sges(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    const Slice& s = items[i].slice;
    ibv_send_wr& wr = wrs[i];
    wr = {};
    sges[i] = ibv_sge{s.localAddr, static_cast<uint32_t>(s.length), items[i].lkey};
    wr.sg_list = &sges[i];
    wr.num_sge = s.length > 0 ? 1 : 0;
    wr.wr.rdma.remote_addr = s.remoteAddr;
    wr.wr.rdma.rkey = items[i].rkey;
    if (s.op == Op::kRead) {
      wr.opcode = IBV_WR_RDMA_READ;
    } else if (s.withImm) {
      wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
      wr.imm_data = htonl(s.imm);
    } else {
      wr.opcode = IBV_WR_RDMA_WRITE;
    }
    if (s.op != Op::kRead && s.length <= maxInline) wr.send_flags |= IBV_SEND_INLINE;
    bool last = i + 1 == items.size();
    if (last || ch.unsignalled + 1 >= ch.signalEvery) {
      wr.send_flags |= IBV_SEND_SIGNALED;
      ch.unsignalled = 0;
    } else {
      ++ch.unsignalled;
    }
    wr.wr_id = ch.nextSeq++;
    wr.next = last ? nullptr : &wrs[i + 1];
  }
  ibv_send_wr* bad = nullptr;
  int rc = ibv_post_send(ch.qp.get(), wrs.data(), &bad);
  // Work requests before `bad` were posted and are tracked; the rest were not.
  size_t posted = rc == 0 ? items.size() : static_cast<size_t>(bad - wrs.data());
  for (size_t i = 0; i < posted; ++i) {
    bool signalled = (wrs[i].send_flags & IBV_SEND_SIGNALED) != 0;
    ch.inFlight.push_back(InFlight{wrs[i].wr_id, signalled, items[i].slice});
    ++ch.inFlight.back().slice.attempts;
  }
  items.erase(items.begin(), items.begin() + static_cast<long>(posted));
  if (rc != 0) {
    errno = rc;
    return TIDE_ERRNO("ibv_post_send to rank " + std::to_string(ch.peer));
  }
  return Status::ok();
}

Status postReceives(Channel& ch, uint64_t channelIndex, uint32_t count) {
  for (uint32_t i = 0; i < count; ++i) {
    ibv_recv_wr wr{};
    wr.wr_id = channelIndex;
    wr.num_sge = 0;
    ibv_recv_wr* bad = nullptr;
    int rc = ibv_post_recv(ch.qp.get(), &wr, &bad);
    if (rc != 0) {
      errno = rc;
      return TIDE_ERRNO("ibv_post_recv for rank " + std::to_string(ch.peer));
    }
  }
  return Status::ok();
}

void breakChannel(Channel& ch, const std::string& reason) {
  if (ch.broken) return;
  ch.broken = true;
  ch.brokenReason = reason;
  TIDE_LOG_WARN("rdma: QP {} to rank {} (rail {}) out of service: {}", ch.qp->qp_num, ch.peer,
                ch.rail, reason);
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  (void)ibv_modify_qp(ch.qp.get(), &attr, IBV_QP_STATE);
}

Code codeForWc(ibv_wc_status status) {
  switch (status) {
    case IBV_WC_REM_ACCESS_ERR:
    case IBV_WC_LOC_PROT_ERR:
    case IBV_WC_LOC_ACCESS_ERR:
    case IBV_WC_MW_BIND_ERR:
      return Code::kPermissionDenied;
    case IBV_WC_REM_INV_REQ_ERR:
    case IBV_WC_LOC_LEN_ERR:
      return Code::kOutOfRange;
    case IBV_WC_RETRY_EXC_ERR:
    case IBV_WC_RNR_RETRY_EXC_ERR:
    case IBV_WC_WR_FLUSH_ERR:
    case IBV_WC_REM_ABORT_ERR:
      return Code::kUnavailable;
    default:
      return Code::kInternal;
  }
}

bool isRetryable(ibv_wc_status status) {
  return codeForWc(status) == Code::kUnavailable || codeForWc(status) == Code::kInternal;
}

}  // namespace tide::transport::rdma
