#pragma once
// RDMA CM connection set-up for the channel table of qp_connector.h. Every
// rank listens on each rail's IPv4 address (the one behind its RoCE GID) and
// publishes ip:port in the store; the higher rank of each pair connects, one
// CM connection per (rail, stream). QPs are tide's own (created on its own
// device context); CM supplies the path, QPN and PSN through
// rdma_init_qp_attr, so both connect paths share everything else.

#include <rdma/rdma_cma.h>

#include <memory>
#include <vector>

#include "engine/core/kv_store.h"
#include "engine/core/status.h"
#include "engine/transport/rdma/channel.h"
#include "engine/transport/rdma/qp_connector.h"

namespace tide::transport::rdma {

class CmConnection {
 public:
  // Connects channels (sender QPs in INIT, as createChannels made them) to
  // every other rank. Keeps the CM ids alive until destroyed.
  static Result<std::unique_ptr<CmConnection>> connect(const ConnectPlan& plan, Store& store,
                                                       std::vector<Channel>& channels);
  CmConnection(const CmConnection&) = delete;
  CmConnection& operator=(const CmConnection&) = delete;
  ~CmConnection();

 private:
  CmConnection() = default;
  Status run(const ConnectPlan& plan, Store& store, std::vector<Channel>& channels);

  rdma_event_channel* events_ = nullptr;
  std::vector<rdma_cm_id*> ids_;  // listeners, active and accepted ids
};

}  // namespace tide::transport::rdma
